"""The lockstep engine: two environments measured against each other, in turn, until each case is decided.

Every command that compares two sides runs on it: ``ab``, ``pr``, ``confirm``, ``bisect`` and ``calibrate``.

- `engine`: one pytest session per side, alive for the whole comparison, measuring in turn (`Lockstep`);
- `case`: one case's rounds so far (`CaseResult`): its parts, which ran on a busy machine, its verdict;
- `turns`: the session's end of that link (the protocol);
- `sessions`: what a side is (`Side`: an interpreter and its environment variables), and the older mode,
  whole sessions per side and round;
- `parts`: a comparison in parts, and a whole suite within one budget (`run_group` of a `GroupPlan`);
- `cost`: where the rounds' time went (`RoundCost`);
- `loops`: how many calls of a case one measurement makes, fixed at its first round.
"""
