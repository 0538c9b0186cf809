"""Social-science methods on tidy tables: no model code here."""
