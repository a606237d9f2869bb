"""How answers are shown: terminal tables (`render`), self-contained reports (`report`), plots (`plots`)."""
