"""Side by side: every command that measures two environments against each other, in lockstep.

- `lockstep`: ``daskbench ab``, one pytest session per side measuring in turn (`turns` is the session's
  end of the link); `sessions`: the older mode, whole sessions per side and round, and `Side`, what a
  side is (an interpreter and its environment variables) for every command here.
- `calibrate`: ``daskbench calibrate``, planted changes (`bench_calibration`) and what the A/B found.
- `bisect`: ``daskbench bisect``, a binary search over releases or commits, each step a lockstep A/B.
- `confirm`: ``daskbench confirm``, a suspect regression measured against the last good run's environment.
- `pr`: ``daskbench pr``, a pull request's base against its head, one comment kept up to date.
"""
