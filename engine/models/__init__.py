"""The model catalogue (curated target/draft pairs, data in catalogue.toml) and the Hugging Face hub downloads."""
