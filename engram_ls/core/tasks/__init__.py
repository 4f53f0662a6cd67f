"""Tasks: the checkbox items of every note (``grammar``), as the index keeps them (``store``),
the requests that list them (``request``, ``query``) and the edits that complete them
(``edit``)."""
