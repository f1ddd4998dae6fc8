-- Version 17: the audit trail's side of a one-statement write, as a function to call once the
-- write holds its item's lock. Unless the newest entry about the item (without a scope) is a
-- write by the same writer, it appends the entry opening the writer's run with
-- `audit_open_run` (version 15, which takes the trail's lock, class `lock_class`). It returns
-- true, for the write to select from.
--
-- A function, not a subquery of the write, because of when the trail is read. A statement
-- reads the snapshot taken when it began: a forget that committed while the write waited for
-- the item's lock would be invisible to its subquery, and the write would continue the run the
-- forget had ended. Each statement of a volatile function reads a snapshot taken when it runs,
-- so this one sees every entry committed before the write held the lock.
CREATE FUNCTION audit_keep_run(lock_class integer, at bigint, memory text, item text,
    source text, session text, client text, detail text) RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    IF NOT EXISTS (
        SELECT 1 FROM (SELECT a.action, a.source, a.session, a.client FROM audit a
            WHERE a.memory = audit_keep_run.memory AND a.scope = ''
              AND a.item = audit_keep_run.item
            ORDER BY a.seq DESC LIMIT 1) AS n
        WHERE n.action = 'write' AND n.source = audit_keep_run.source
          AND n.session IS NOT DISTINCT FROM audit_keep_run.session
          AND n.client IS NOT DISTINCT FROM audit_keep_run.client) THEN
        PERFORM audit_open_run(lock_class, at, memory, item, source, session, client, detail);
    END IF;
    RETURN true;
END
$$;
