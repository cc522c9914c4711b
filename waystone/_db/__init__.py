"""The database floor: connections, the embedded Postgres, migrations."""
