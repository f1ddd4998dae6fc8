"""TypedDicts of the JSON contract, generated from `schemas/` by generate_types.py: do not edit."""
