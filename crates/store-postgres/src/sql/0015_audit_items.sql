-- Version 15: the audit trail by item, newest last, so a write finds the newest entry about
-- its item (whether its writer's run of writes is open) without reading the whole trail. The
-- index carries the action and the writer too, so that lookup can read the index alone.
CREATE INDEX audit_item ON audit (memory, scope, item, seq) INCLUDE (action, source, session, client);

-- Appends the write entry opening a writer's run on an item without a scope (memory, item,
-- writer, detail), at `at`, after taking the trail's advisory lock (class `lock_class`), as
-- every append to the trail does. A record calls it only when it opens a run, so the
-- statement that records needs no insert into `audit` of its own.
CREATE FUNCTION audit_open_run(lock_class integer, at bigint, memory text, item text,
    source text, session text, client text, detail text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(lock_class, hashtext(current_schema()));
    INSERT INTO audit (at, action, memory, scope, item, source, session, client, detail)
    VALUES (at, 'write', memory, '', item, source, session, client, detail);
END
$$;
