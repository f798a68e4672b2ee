"""The database guard of analysis runs (PostgreSQL only; see apps/core/dbguards.py).

The services write a run's outcome once, in the transaction that stores its blobs. This trigger
makes that a property of the database rather than of the code: what a run was asked to do
(version, number, kind, protocol hash, parameters, seed, requester, rerun_of) never changes; its
input and result hashes never change once set; a finished run (succeeded or failed) never
changes at all; runs are never deleted or truncated.
"""

from django.db import migrations

from apps.core.dbguards import custom_guard

_GUARD = r"""
CREATE OR REPLACE FUNCTION preregistry_guard_analysis_run() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        RAISE EXCEPTION 'preregistry: DELETE on % is refused: analysis runs are kept',
            TG_TABLE_NAME;
    END IF;
    IF OLD.state IN ('succeeded', 'failed') THEN
        RAISE EXCEPTION 'preregistry: UPDATE on % is refused: analysis run % has finished',
            TG_TABLE_NAME, OLD.id;
    END IF;
    IF OLD.result_sha256 IS NOT NULL
        AND NEW.result_sha256 IS DISTINCT FROM OLD.result_sha256 THEN
        RAISE EXCEPTION 'preregistry: UPDATE on % is refused: a result hash is written once',
            TG_TABLE_NAME;
    END IF;
    IF OLD.input_sha256 IS NOT NULL
        AND NEW.input_sha256 IS DISTINCT FROM OLD.input_sha256 THEN
        RAISE EXCEPTION 'preregistry: UPDATE on % is refused: an input hash is written once',
            TG_TABLE_NAME;
    END IF;
    IF NEW.version_id IS DISTINCT FROM OLD.version_id
        OR NEW.number IS DISTINCT FROM OLD.number
        OR NEW.kind IS DISTINCT FROM OLD.kind
        OR NEW.protocol_sha256 IS DISTINCT FROM OLD.protocol_sha256
        OR NEW.parameters IS DISTINCT FROM OLD.parameters
        OR NEW.seed IS DISTINCT FROM OLD.seed
        OR NEW.requested_by_id IS DISTINCT FROM OLD.requested_by_id
        OR NEW.rerun_of_id IS DISTINCT FROM OLD.rerun_of_id
        OR NEW.created_at IS DISTINCT FROM OLD.created_at THEN
        RAISE EXCEPTION 'preregistry: UPDATE on % is refused: what a run was asked to do '
            'never changes', TG_TABLE_NAME;
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER analysis_analysisrun_guard BEFORE UPDATE OR DELETE ON analysis_analysisrun
    FOR EACH ROW EXECUTE FUNCTION preregistry_guard_analysis_run();
CREATE TRIGGER analysis_analysisrun_no_truncate BEFORE TRUNCATE ON analysis_analysisrun
    FOR EACH STATEMENT EXECUTE FUNCTION preregistry_refuse_change();
"""

_UNGUARD = r"""
DROP TRIGGER IF EXISTS analysis_analysisrun_guard ON analysis_analysisrun;
DROP TRIGGER IF EXISTS analysis_analysisrun_no_truncate ON analysis_analysisrun;
DROP FUNCTION IF EXISTS preregistry_guard_analysis_run();
"""


class Migration(migrations.Migration):
    dependencies = [("analysis", "0001_initial"), ("core", "0001_guard_functions")]
    operations = [custom_guard(_GUARD, _UNGUARD)]
