# Sphinx configuration for help.kestrelcharge.example
project = "Kestrel Charge help centre"
copyright = "2026, Kestrel Charge B.V."
extensions = ["sphinx.ext.intersphinx", "sphinx_copybutton"]
html_theme = "furo"
html_title = "Kestrel Charge help"
language = "en"
exclude_patterns = ["_build", "drafts/*"]
