import cProfile, pstats, io, os, random, time
import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from tests.benchmarks.test_transparency_log import build_log

pytestmark = [pytest.mark.timeout(0), pytest.mark.postgres]

@pytest.mark.django_db(transaction=True)
def test_prof():
    protocol, signed_size, root, state, note, auditor = build_log()
    client = Client(); client.force_login(auditor)
    url = f"/api/v1/protocols/{protocol.code}/log/proof/inclusion"
    rng = random.Random(1)
    for _ in range(20): client.get(url, {"seq": rng.randint(1, signed_size), "tree_size": signed_size})
    with CaptureQueriesContext(connection) as q:
        client.get(url, {"seq": 77, "tree_size": signed_size})
    for x in q.captured_queries: print(x["time"], x["sql"][:300])
    pr = cProfile.Profile()
    c0 = time.process_time(); w0 = time.perf_counter()
    pr.enable()
    for _ in range(300): client.get(url, {"seq": rng.randint(1, signed_size), "tree_size": signed_size})
    pr.disable()
    print("cpu/req ms", (time.process_time()-c0)/300*1000, "wall", (time.perf_counter()-w0)/300*1000)
    s = io.StringIO(); pstats.Stats(pr, stream=s).sort_stats("cumulative").print_stats(70); print(s.getvalue())
    s = io.StringIO(); pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(40); print(s.getvalue())
