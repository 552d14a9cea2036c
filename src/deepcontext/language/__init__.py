"""Language tools shared by extraction and retrieval, below both: word lists (``gazetteer``,
``common_words``), dates and times said in text (``timeparse``, ``time_resolution``) and what makes
a statement or a question about a standing fact (``standing``, ``standing_model``).

Tokenising and stemming for the keyword index live in :mod:`deepcontext.text`, lower still.
"""
