"""The measurement scripts behind docs/measured.md, run by hand from the checkout's top folder (not by CI, not
shipped). measure/README.md lists each: what it measures, the section it feeds and how long it takes."""
