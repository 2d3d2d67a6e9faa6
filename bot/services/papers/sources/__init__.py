"""Live sources of papers beside files and arXiv's own fetch: one `Source` interface (`base`), the
polite HTTP every source shares (`http`), the fetch that stores what a source yields and resumes it
(`fetch`), and one module per source: `rss` (any RSS or Atom feed), `biorxiv` (bioRxiv and medRxiv),
`openreview` (an OpenReview venue), `arxiv` (arXiv's API). `specs` names them in `PAPERBOT_SOURCES`
and on the command line; `daily` runs the configured ones on the scheduler."""
