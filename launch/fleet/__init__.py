"""A fleet: several KT engines (launched here, on other hosts, or attached by URL) behind sglang-router."""
