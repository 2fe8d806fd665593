"""Cross-cutting properties: invariants every converted batch satisfies and metamorphic
relations between conversions (hypothesis-driven)."""
