"""LLM-based feature extraction (OpenAI-compatible endpoints) for patient message ranking."""
