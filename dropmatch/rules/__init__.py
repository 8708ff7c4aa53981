"""The acceptance rules, one object each, one module per family; `dropmatch.criteria.RULES` lists them."""
