"""What a trained model is: the label space, the classifier families and the candidate catalogue, ensembles,
the model card and THE prediction artifact (``TrackPredictor`` in an MLflow pyfunc). Imports features only."""
