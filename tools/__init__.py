"""Developer tools run by hand from the checkout's top folder (not shipped): ``tools/docs-tables`` writes the
docs' tables that restate the code."""
