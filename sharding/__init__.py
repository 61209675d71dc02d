"""The queue sharded by tenant on Vitess (docs/scaling.md): which tables are sharded, and how
migrations reach each keyspace."""
