"""Report sections of the bundled papers' studies (declared by each study's `report`)."""
