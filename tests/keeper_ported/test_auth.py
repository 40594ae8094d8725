"""The assertions of ClickHouse's tests/integration/test_keeper_auth/test.py, ported: digest
auth, `auth` ACLs, partial permissions, super auth, refused auth and ACLs, world:anyone with
single permissions, ACLs after a restart, getACL/setACL. Tests upstream runs against both servers
run here against a real ZooKeeper (GENUINE_HOSTS) and testkeeper's keeper flavor (FAKE_HOSTS,
started with a super digest for `super:admin`); the Keeper-only ones against the latter.

Written for this repository from the upstream assertions; the code is not upstream's.
"""
import os
import subprocess
import tempfile

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import AuthFailedError, InvalidACLError, KazooException, NoAuthError
from kazoo.security import make_acl

USER1_DIGEST = "user1:XDkd2dsEuhc9ImU3q8pa8UOdtpI="  # digest of user1:password1


def client(hosts):
    zk = KazooClient(hosts=hosts, timeout=30.0)
    zk.start()
    return zk


def fake():
    return client(os.environ["FAKE_HOSTS"])


def genuine():
    return client(os.environ["GENUINE_HOSTS"])


def close(*zks):
    for zk in zks:
        if zk is not None:
            zk.stop()
            zk.close()


BOTH = pytest.mark.parametrize("connect", [genuine, fake], ids=["zookeeper", "testkeeper"])


def perms(**granted):
    names = ("read", "write", "create", "delete", "admin")
    return {n: granted.get(n, False) for n in names}


@BOTH
def test_remove_acl(connect):
    zk = connect()
    try:
        zk.add_auth("digest", "user1:password1")
        zk.create("/remove_acl1", b"dataX", acl=[make_acl("digest", USER1_DIGEST, **perms(read=True))])
        zk.create("/remove_acl2", b"dataX", acl=[make_acl("digest", USER1_DIGEST, **perms(read=True, write=True))])
        zk.create("/remove_acl3", b"dataX", acl=[make_acl("digest", USER1_DIGEST, all=True)])
        # Deleting needs DELETE on the parent, not on the node.
        zk.delete("/remove_acl2")
        zk.create("/remove_acl4", b"dataX",
                  acl=[make_acl("digest", USER1_DIGEST, **perms(read=True, write=True, create=True))])
        acls, stat = zk.get_acls("/remove_acl3")
        assert stat.aversion == 0
        assert [(a.acl_list, a.perms) for a in acls] == [(["ALL"], 31)]
    finally:
        close(zk)


@BOTH
def test_digest_auth_basic(connect):
    owner = other = None
    try:
        owner = connect()
        owner.add_auth("digest", "user1:password1")
        owner.create("/no_acl", b"")
        owner.create("/all_acl", b"data", acl=[make_acl("auth", "", all=True)])
        owner.create("/all_digest_acl", b"dataX", acl=[make_acl("digest", USER1_DIGEST, all=True)])
        assert owner.get("/all_acl")[0] == b"data"
        assert owner.get("/all_digest_acl")[0] == b"dataX"

        other = connect()
        other.set("/no_acl", b"hello")
        assert other.get("/no_acl")[0] == b"hello"
        for call in (lambda: other.set("/all_acl", b"hello"), lambda: other.get("/all_acl"),
                     lambda: other.get("/all_digest_acl")):
            with pytest.raises(NoAuthError):
                call()
        with pytest.raises(AuthFailedError):
            other.add_auth("world", "anyone")
        close(other)  # the session is broken after AUTHFAILED

        other = connect()
        other.add_auth("digest", "user2:password2")
        for call in (lambda: other.set("/all_acl", b"hello"), lambda: other.get("/all_acl"),
                     lambda: other.get("/all_digest_acl")):
            with pytest.raises(NoAuthError):
                call()
        other.create("/some_allowed_node", b"data")
        other.add_auth("digest", "user1:password1")
        for path in ("/no_acl", "/all_acl"):
            other.set(path, b"auth_added")
            assert other.get(path)[0] == b"auth_added"
    finally:
        close(owner, other)


def test_super_auth():
    zk = fake()
    try:
        zk.add_auth("digest", "user1:password1")
        zk.create("/super_no_acl", b"")
        zk.create("/super_all_acl", b"data", acl=[make_acl("auth", "", all=True)])
    finally:
        close(zk)
    su = fake()
    try:
        su.add_auth("digest", "super:admin")
        for path in ("/super_no_acl", "/super_all_acl"):
            su.set(path, b"value")
            assert su.get(path)[0] == b"value"
    finally:
        close(su)


@BOTH
def test_digest_auth_multiple(connect):
    zks = []
    try:
        owner = connect()
        zks.append(owner)
        for n in (1, 2, 3):
            owner.add_auth("digest", f"user{n}:password{n}")
        owner.create("/multi_all_acl", b"data", acl=[make_acl("auth", "", all=True)])
        for n, value in ((1, b"X"), (2, b"Y")):
            zk = connect()
            zks.append(zk)
            zk.add_auth("digest", f"user{n}:password{n}")
            zk.set("/multi_all_acl", value)
            assert zk.get("/multi_all_acl")[0] == value
    finally:
        close(*zks)


@BOTH
def test_partial_auth(connect):
    zk = connect()
    try:
        zk.add_auth("digest", "user1:password1")
        no_read = perms(write=True, create=True, delete=True, admin=True)
        zk.create("/partial_acl", b"data", acl=[make_acl("auth", "", **no_read)])
        zk.set("/partial_acl", b"X")
        zk.create("/partial_acl/subnode", b"X", acl=[make_acl("auth", "", **no_read)])
        with pytest.raises(NoAuthError):
            zk.get("/partial_acl")
        with pytest.raises(NoAuthError):
            zk.get_children("/partial_acl")
        assert zk.exists("/partial_acl") is not None  # exists needs no permission

        zk.create("/partial_acl_create", b"data",
                  acl=[make_acl("auth", "", **perms(read=True, write=True, delete=True, admin=True))])
        with pytest.raises(NoAuthError):
            zk.create("/partial_acl_create/subnode")

        zk.create("/partial_acl_set", b"data",
                  acl=[make_acl("auth", "", **perms(read=True, create=True, delete=True, admin=True))])
        with pytest.raises(NoAuthError):
            zk.set("/partial_acl_set", b"X")

        zk.create("/partial_acl_delete", b"data",
                  acl=[make_acl("auth", "", **perms(read=True, write=True, create=True, admin=True))])
        zk.create("/partial_acl_delete/subnode")
        with pytest.raises(NoAuthError):
            zk.delete("/partial_acl_delete/subnode")
    finally:
        close(zk)


@pytest.mark.parametrize("scheme,credential", [
    ("world", "anyone"), ("adssagf", "user1:password1"), ("digest", ""), ("", "user1:password1"),
    ("digest", "user1"), ("digest", "user1:password:otherpassword"), ("auth", "user1:password"),
    ("world", "somebody"),
])
def test_bad_auth(scheme, credential):
    zk = fake()
    try:
        with pytest.raises(AuthFailedError):
            zk.add_auth(scheme, credential)
    finally:
        close(zk)


@pytest.mark.parametrize("scheme,ident", [("dasd", ""), ("digest", ""), ("", ""), ("digest", "dsdasda"),
                                          ("digest", "dsad:DSAa:d")])
def test_bad_acl(scheme, ident):
    zk = fake()
    try:
        with pytest.raises(InvalidACLError):
            zk.create("/bad_acl", b"data",
                      acl=[make_acl(scheme, ident, **perms(read=True, create=True, delete=True, admin=True))])
    finally:
        close(zk)


def test_world_anyone_specific_permissions():
    owner = fake()
    other = None
    try:
        owner.add_auth("digest", "user1:password1")
        for name, granted in (("read_only", perms(read=True)), ("write_only", perms(write=True)),
                              ("create_only", perms(create=True)), ("delete_only", perms(delete=True)),
                              ("admin_only", perms(admin=True))):
            owner.create(f"/anyone_{name}", b"data",
                         acl=[make_acl("world", "anyone", **granted), make_acl("auth", "", all=True)])
        owner.create("/anyone_delete_only/child", b"child_data",
                     acl=[make_acl("world", "anyone", **perms(delete=True)), make_acl("auth", "", all=True)])
        other = fake()
        assert other.get("/anyone_read_only")[0] == b"data"
        with pytest.raises(NoAuthError):
            other.set("/anyone_read_only", b"new")
        with pytest.raises(NoAuthError):
            other.get("/anyone_write_only")
        other.set("/anyone_write_only", b"new")
        for name in ("create_only", "delete_only", "admin_only"):
            with pytest.raises(NoAuthError):
                other.get(f"/anyone_{name}")
            with pytest.raises(NoAuthError):
                other.set(f"/anyone_{name}", b"new")
        other.create("/anyone_create_only/new_child", b"child")
        other.delete("/anyone_delete_only/child")
        acls, _ = other.get_acls("/anyone_admin_only")
        assert len(acls) == 2
        assert (acls[0].id.scheme, acls[0].id.id, acls[0].perms) == ("world", "anyone", 16)
        owner.create("/anyone_read_write", b"data",
                     acl=[make_acl("world", "anyone", **perms(read=True, write=True)), make_acl("auth", "", all=True)])
        assert other.get("/anyone_read_write")[0] == b"data"
        other.set("/anyone_read_write", b"updated")
        assert other.get("/anyone_read_write")[0] == b"updated"
    finally:
        close(owner, other)


def serve(data_dir):
    """A keeper-flavor `testkeeper serve` on DATA_DIR; (process, hosts)."""
    proc = subprocess.Popen(
        [os.environ["TESTKEEPER_BIN"], "serve", "--listen", "127.0.0.1:0", "--data-dir", data_dir],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = proc.stdout.readline()
    assert line.startswith("testkeeper listening on "), line
    return proc, line.rsplit(" ", 1)[1].strip()


def test_auth_after_restart():
    """Upstream restarts Keeper; here a durable testkeeper is killed and started again."""
    with tempfile.TemporaryDirectory() as data:
        proc, hosts = serve(data)
        zks = []
        try:
            for user in ("user1:password1", "user2:password2", None):
                zk = client(hosts)
                zks.append(zk)
                if user:
                    zk.add_auth("digest", user)
            zks[0].create("/snapshot_acl", b"data", acl=[make_acl("auth", "", all=True)])
            zks[1].create("/snapshot_acl1", b"data", acl=[make_acl("auth", "", all=True)])
            zks[2].create("/snapshot_acl2", b"data")
            for i in range(100):
                zks[0].create(f"/snapshot_acl/path{i}", b"data", acl=[make_acl("auth", "", all=True)])
        finally:
            proc.kill()
            proc.wait()
            for zk in zks:
                zk.stop()
                zk.close()
        proc, hosts = serve(data)
        zks = []
        try:
            one, two, anon = client(hosts), client(hosts), client(hosts)
            zks = [one, two, anon]
            with pytest.raises(NoAuthError):
                one.get("/snapshot_acl")
            one.add_auth("digest", "user1:password1")
            assert one.get("/snapshot_acl")[0] == b"data"
            with pytest.raises(NoAuthError):
                one.get("/snapshot_acl1")
            assert one.get("/snapshot_acl2")[0] == b"data"
            for i in range(100):
                assert one.get(f"/snapshot_acl/path{i}")[0] == b"data"
            two.add_auth("digest", "user2:password2")
            assert two.get("/snapshot_acl1")[0] == b"data"
            with pytest.raises(NoAuthError):
                two.get("/snapshot_acl")
            assert anon.get("/snapshot_acl2")[0] == b"data"
            for path in ("/snapshot_acl", "/snapshot_acl1"):
                with pytest.raises(NoAuthError):
                    anon.get(path)
        finally:
            close(*zks)
            proc.kill()
            proc.wait()


@BOTH
def test_get_set_acl(connect):
    owner = other = None
    try:
        owner = connect()
        owner.add_auth("digest", "username1:secret1")
        owner.add_auth("digest", "username2:secret2")
        owner.create("/set_get_acl", b"data", acl=[make_acl("auth", "", all=True)])
        acls, stat = owner.get_acls("/set_get_acl")
        assert stat.aversion == 0 and len(acls) == 2
        for acl in acls:
            assert (acl.acl_list, acl.id.scheme, acl.perms) == (["ALL"], "digest", 31)
            assert acl.id.id in ("username1:eGncMdBgOfGS/TCojt51xWsWv/Y=", "username2:qgSSumukVlhftkVycylbHNvxhFU=")

        other = connect()
        other.add_auth("digest", "username1:secret1")
        other.add_auth("digest", "username3:secret3")
        other.set_acls("/set_get_acl", acls=[make_acl("auth", "", **perms(read=True, create=True, delete=True, admin=True))])
        acls, stat = other.get_acls("/set_get_acl")
        assert stat.aversion == 1 and len(acls) == 2
        for acl in acls:
            assert (acl.acl_list, acl.id.scheme, acl.perms) == (["READ", "CREATE", "DELETE", "ADMIN"], "digest", 29)
            assert acl.id.id in ("username1:eGncMdBgOfGS/TCojt51xWsWv/Y=", "username3:CvWITOxxTwk+u6S5PoGlQ4hNoWI=")
        with pytest.raises(KazooException):
            other.set_acls("/set_get_acl", acls=[make_acl("auth", "", all=True)], version=0)
    finally:
        close(owner, other)
