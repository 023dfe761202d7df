"""The Portal's web tier: accounts, submissions, the public catalog, guides and status, plus
what every page and API shares (errors, pages, mail, Markdown, uploads)."""
