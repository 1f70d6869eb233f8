"""Streamlit dashboard of DT-PBO Explorer."""
