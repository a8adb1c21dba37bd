"""Pure statistics: no Django."""
