"""``daskbench bisect``: the first release or commit that made the selected cases slower.

- `plan`: what a bisection searches (the candidates between a good and a bad end, oldest first);
- `search`: the binary search over them, each step a lockstep A/B (`daskbench.lockstep`).
"""
