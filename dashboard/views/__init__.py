"""Page scripts of the dashboard, run by ``st.navigation`` from ``dashboard/app.py``.

They are scripts, not importable modules: each renders one page when executed.
"""
