"""``python -m kconsumer``: the same as the ``kconsumer`` command."""

from __future__ import annotations

import sys

from .cli import main

sys.exit(main())
