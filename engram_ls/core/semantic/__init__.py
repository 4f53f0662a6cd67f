"""Search by meaning: static embedding models, chunks of notes, vectors in the index.

- ``model``: loading a static embedding model offline and embedding texts with it;
- ``chunks``: a note as the chunks that are embedded;
- ``store``: the semantic tables of the index (no numpy);
- ``vectors``: the in-memory sign bits of every chunk, nearest chunks, re-ranking;
- ``engine``: ``Semantic``, one vault's model, embedding passes and status.

Everything but ``store``, ``chunks`` and the availability checks of ``model`` needs the
``semantic`` extra (numpy, tokenizers, safetensors, the model's package).
"""
