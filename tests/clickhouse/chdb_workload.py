"""Runs one phase of the chdb (in-process ClickHouse 26.x) workload against a
ZooKeeper-protocol server and prints a JSON report on stdout.

Driven by tests/tests/clickhouse_chdb.rs, once per phase, each phase in a
fresh process (so a fresh ClickHouse and fresh ZooKeeper sessions):

  write   KeeperMap CREATE / INSERT / SELECT / strict-mode duplicate INSERT /
          ALTER UPDATE / ALTER DELETE / TRUNCATE / DROP on table `km`; a
          second table `km_keep` that outlives the phase; a keeper-stored UDF
          and a keeper-stored named collection.
  verify  re-attaches `km_keep` (same KeeperMap path), reads the UDF and the
          named collection back from the server, then drops all three.

Each statement's outcome is recorded under a step name: {"ok": bool,
"result": CSV text or null, "error": message or null}. The Rust side asserts
on them; this script judges nothing, it only observes. After ClickHouse has
shut down, the phase dumps the whole znode tree (zktree.py, through kazoo).

Usage: chdb_workload.py PHASE CONFIG_XML HOSTS
"""

import json
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from zktree import dump_tree  # noqa: E402 (same directory)


def run_steps(conn, steps):
    report = {}
    for name, sql in steps:
        started = time.monotonic()
        try:
            result = conn.query(sql, "CSV")
            entry = {"ok": True, "result": str(result).strip(), "error": None}
        except Exception as e:  # chdb raises RuntimeError-like errors
            entry = {"ok": False, "result": None, "error": str(e)}
        entry["secs"] = round(time.monotonic() - started, 3)
        report[name] = entry
    return report


WRITE_STEPS = [
    ("km_create", "CREATE TABLE km (k UInt64, v String) ENGINE = KeeperMap('/km') PRIMARY KEY k"),
    ("km_insert", "INSERT INTO km VALUES (1, 'a'), (2, 'b'), (3, 'c')"),
    ("km_select", "SELECT k, v FROM km ORDER BY k"),
    ("km_point", "SELECT v FROM km WHERE k = 2"),
    ("km_points", "SELECT k, v FROM km WHERE k IN (1, 3, 42) ORDER BY k"),
    # Non-strict INSERT of an existing key overwrites it (a set in a multi).
    ("km_upsert", "INSERT INTO km VALUES (1, 'A')"),
    ("km_strict_dup",
     "INSERT INTO km SETTINGS keeper_map_strict_mode = 1 VALUES (1, 'x')"),
    ("km_update", "ALTER TABLE km UPDATE v = 'z' WHERE k = 2"),
    ("km_delete", "ALTER TABLE km DELETE WHERE k = 3"),
    ("km_after_alter", "SELECT k, v FROM km ORDER BY k"),
    ("km_truncate", "TRUNCATE TABLE km"),
    ("km_after_truncate", "SELECT count() FROM km"),
    ("km_insert_again", "INSERT INTO km VALUES (7, 'g')"),
    ("km_after_insert_again", "SELECT k, v FROM km ORDER BY k"),
    ("km_drop", "DROP TABLE km"),
    ("keep_create",
     "CREATE TABLE km_keep (k UInt64, v String) ENGINE = KeeperMap('/km_keep') PRIMARY KEY k"),
    ("keep_insert",
     "INSERT INTO km_keep SELECT number, toString(number * number) FROM numbers(100)"),
    ("keep_count", "SELECT count(), sum(k) FROM km_keep"),
    ("udf_create", "CREATE FUNCTION tk_plus_one AS (x) -> x + 1"),
    ("udf_call", "SELECT tk_plus_one(41)"),
    ("nc_create", "CREATE NAMED COLLECTION tk_nc AS key1 = 'v1', key2 = 2"),
    ("nc_list", "SELECT name FROM system.named_collections WHERE name = 'tk_nc'"),
]

VERIFY_STEPS = [
    ("keep_attach",
     "CREATE TABLE km_keep (k UInt64, v String) ENGINE = KeeperMap('/km_keep') PRIMARY KEY k"),
    ("keep_count", "SELECT count(), sum(k) FROM km_keep"),
    ("keep_point", "SELECT v FROM km_keep WHERE k = 9"),
    ("udf_call", "SELECT tk_plus_one(1)"),
    ("udf_list",
     "SELECT name FROM system.functions WHERE origin = 'SQLUserDefined' AND name = 'tk_plus_one'"),
    ("nc_list", "SELECT name FROM system.named_collections WHERE name = 'tk_nc'"),
    ("keep_drop", "DROP TABLE km_keep"),
    ("udf_drop", "DROP FUNCTION tk_plus_one"),
    ("nc_drop", "DROP NAMED COLLECTION tk_nc"),
    ("udf_gone",
     "SELECT count() FROM system.functions WHERE origin = 'SQLUserDefined' AND name = 'tk_plus_one'"),
    ("nc_gone", "SELECT count() FROM system.named_collections WHERE name = 'tk_nc'"),
]


def main():
    phase, config, hosts = sys.argv[1:4]
    steps = {"write": WRITE_STEPS, "verify": VERIFY_STEPS}[phase]
    import chdb

    started = time.monotonic()
    conn = chdb.connect(":memory:?config-file=" + config)
    report = {"phase": phase, "chdb_version": chdb.__version__}
    report["steps"] = run_steps(conn, steps)
    report["clickhouse_version"] = run_steps(conn, [("v", "SELECT version()")])["v"]["result"]
    closing = time.monotonic()
    conn.close()
    report["close_secs"] = round(time.monotonic() - closing, 3)
    report["chdb_secs"] = round(time.monotonic() - started, 3)
    report["tree"] = dump_tree(hosts)
    json.dump(report, sys.stdout)
    sys.stdout.write("\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
