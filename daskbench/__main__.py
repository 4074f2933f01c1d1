import sys

from daskbench.cli import main

sys.exit(main())
