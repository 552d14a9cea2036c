"""``deepcq.vocabulary``."""

from deepcontext.query.synonyms import SynonymMap, available_packs, load_pack

__all__ = ["SynonymMap", "available_packs", "load_pack"]
