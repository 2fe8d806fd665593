"""Model-level checks: a backend's ``TrainingBatch`` fed to real (tiny) transformers must train
every document exactly as that document trained alone.

``models.py`` builds the models from a configuration (fixed-seed random weights, float64, CPU);
``wiring.py`` feeds a batch to them on each route (SPEC.md, "Feeding a TrainingBatch to a
model"), with emulated varlen attention; ``data.py`` holds the corpus batches;
``routes.py`` names the routes, ``documents.py`` the documents a model must see alone,
``evaluation.py`` runs one route against each document alone, ``equivalence.py`` compares
the packed batch with its documents, ``mismatch_blame.py`` blames a difference on the key that
explains it; ``test_model_equivalence.py`` runs it in the suite and ``cli.py``
is ``batchspec check-model``. Everything here needs the ``model`` extra (transformers 5.x).
"""
