"""Reading inputs and turning text into features: ingestion of every layout, the label grammar, the model text
and TF-IDF settings, sentence embeddings. Imports nothing else of papertrack but settings and errors."""
