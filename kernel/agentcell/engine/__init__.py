"""The engine: the turn loop and what it folds the event log into."""
