-- The example payments provider's statements, on its own SQLite file (not Waystone's
-- database). Each block starts with `-- name: NAME`; payments.py runs them by name
-- (waystone.sql.named). Parameters use sqlite3's ? and :name styles.

-- name: schema
-- Run as one script when the server starts: idempotent.
CREATE TABLE IF NOT EXISTS refunds (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    idempotency_key TEXT NOT NULL UNIQUE,
    order_id TEXT NOT NULL,
    amount TEXT NOT NULL,
    currency TEXT NOT NULL,
    status TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS refunds_order_id ON refunds (order_id);
CREATE TABLE IF NOT EXISTS notifications (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    to_addr TEXT NOT NULL,
    body TEXT NOT NULL,
    client_ref TEXT NOT NULL,
    status TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS notifications_client_ref ON notifications (client_ref);
CREATE TABLE IF NOT EXISTS refused (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    endpoint TEXT NOT NULL,
    ref TEXT NOT NULL,
    deadline REAL NOT NULL,
    at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS faults (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    endpoint TEXT NOT NULL,
    mode TEXT NOT NULL,
    remaining INTEGER NOT NULL,
    delay_s REAL NOT NULL
);

-- Connections and transactions.

-- name: wal
PRAGMA journal_mode = WAL;

-- name: busy_timeout
PRAGMA busy_timeout = 10000;

-- name: begin_write
BEGIN IMMEDIATE;

-- name: commit
COMMIT;

-- name: rollback
ROLLBACK;

-- Faults.

-- name: oldest_fault
SELECT seq, mode, remaining, delay_s FROM faults WHERE endpoint = ? ORDER BY seq LIMIT 1;

-- name: delete_fault
DELETE FROM faults WHERE seq = ?;

-- name: use_fault
UPDATE faults SET remaining = remaining - 1 WHERE seq = ?;

-- name: add_fault
INSERT INTO faults (id, endpoint, mode, remaining, delay_s) VALUES (?, ?, ?, ?, ?);

-- name: faults
SELECT id, endpoint, mode, remaining, delay_s FROM faults ORDER BY seq;

-- name: clear_faults
DELETE FROM faults;

-- name: refuse
INSERT INTO refused (endpoint, ref, deadline, at) VALUES (?, ?, ?, ?);

-- Refunds.

-- name: refund_columns
-- How every read of refunds begins (included in them, never run alone).
SELECT id, status, order_id, amount, currency, idempotency_key, created_at FROM refunds

-- name: refund_by_key
-- include: refund_columns
WHERE idempotency_key = ?;

-- name: refund_by_id
-- include: refund_columns
WHERE id = ?;

-- name: refunds
-- include: refund_columns
ORDER BY seq;

-- name: refunds_by_key
-- An order_id left NULL matches any.
-- include: refund_columns
WHERE idempotency_key = :idempotency_key AND (:order_id IS NULL OR order_id = :order_id)
ORDER BY seq;

-- name: refunds_by_order
-- include: refund_columns
WHERE order_id = :order_id
ORDER BY seq;

-- name: add_refund
INSERT INTO refunds (id, status, order_id, amount, currency, idempotency_key, created_at)
VALUES (:id, :status, :order_id, :amount, :currency, :idempotency_key, :created_at);

-- Notifications.

-- name: notification_columns
-- How every read of notifications begins (included in them, never run alone).
SELECT id, to_addr, body, client_ref, status, created_at FROM notifications

-- name: notification_by_id
-- include: notification_columns
WHERE id = ?;

-- name: notifications
-- include: notification_columns
ORDER BY seq;

-- name: notifications_by_client_ref
-- include: notification_columns
WHERE client_ref = :client_ref
ORDER BY seq;

-- name: add_notification
INSERT INTO notifications (id, to_addr, body, client_ref, status, created_at)
VALUES (:id, :to, :body, :client_ref, :status, :created_at);

-- The ledger.

-- name: refused
SELECT endpoint, ref, deadline, at FROM refused ORDER BY seq;
