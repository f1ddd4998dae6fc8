-- Version 15: the audit trail by item, newest last, so a write finds the newest entry about
-- its item (whether its writer's run of writes is open) without reading the whole trail. The
-- index carries the action and the writer too, so that lookup can read the index alone.
CREATE INDEX audit_item ON audit (memory, scope, item, seq) INCLUDE (action, source, session, client);
