"""The design's pages, by subject: the grid (``grid``), its parts (``parts``, over
``apps.items.parts``), an item's cells (``cells``), import and export (``transfer``), the
harm-constancy review (``harm_review``) and OPB-01 §6.1's panel (``panel``)."""
