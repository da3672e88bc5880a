"""Write the example pool sqlweave ships: ``sqlweave/data/spider-train-pool.json.gz``.

Spider 1.0's ``train_spider`` pairs (Yu et al. 2018, CC BY-SA 4.0) with their schema names, derived at the current
``POOL_VERSION`` so a pipeline that retrieves examples derives nothing on first use. Run it again after a change
to what the pool derives (``tests/retrieval/test_bundled_pool.py`` fails until you do)::

    .venv/bin/python scripts/bundle_pool.py ../shared/data/spider/train.json
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from sqlweave.config import Settings
from sqlweave.retrieval.pool import BUNDLED_POOL, ExamplePool, write_bundle

SOURCE = ("Spider 1.0, train_spider split (Yu et al. 2018, https://yale-lily.github.io/spider); questions and SQL "
          "unchanged, with skeletons and normalised SQL derived by sqlweave")
LICENSE = "CC BY-SA 4.0 (https://creativecommons.org/licenses/by-sa/4.0/)"


def main(train_file: str) -> None:
    with tempfile.TemporaryDirectory() as cache:  # derive from scratch: nothing from a cache of older code
        settings = Settings(cache_dir=Path(cache), model_dir=Path(cache) / "models")
        pool = ExamplePool.from_spider(train_file, include_user=False, settings=settings)
    n = write_bundle(pool, BUNDLED_POOL, source=SOURCE, license=LICENSE)
    print(f"{n} examples -> {BUNDLED_POOL} "
          f"({BUNDLED_POOL.stat().st_size / 1e6:.2f} MB)")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python scripts/bundle_pool.py PATH/TO/spider/train.json")
    main(sys.argv[1])
