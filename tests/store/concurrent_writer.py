"""One writer of the concurrency tests and benchmark: `python concurrent_writer.py STORE TAG CELLS`
creates a run and stores CELLS cells in it, one transaction each, as `jitlab run` does."""

import sys

from jitlab.store import Store


def main(store_url: str, tag: str, cells: int) -> None:
    store = Store(store_url)
    run_id = store.create_run(
        f"writer-{tag}", ["w"], ["python"], None, {"tag": tag}, {"hostname": f"host-{tag}"}
    )
    for size in range(1, cells + 1):
        samples = [float(size), float(size) + 0.5]
        store.save_cell(run_id, "w", "python", size, {"tag": tag}, {"status": "ok", "samples_s": samples})
    store.set_run_status(run_id, "finished")
    print(run_id)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
