"""Writers for analysed runs: Chrome/Kineto trace, CSV tables, sqlite, msprof-style files."""
