"""Kernel's official Python SDK (0.94.0, unchanged, in daemon/apps) against a running daemon.

Run by test/python-sdk.test.ts, which starts the daemon and a fixtures server and sets
KERNEL_BASE_URL, KERNEL_API_KEY, RBROWSE_FIXTURES_URL, RBROWSE_LOGIN_SITE_URL (a site with a real
login: user bob, password builder) and RBROWSE_ADMIN_TOKEN. Only the SDK and
the standard library: a Kernel user's code, run as written.
"""

import base64
import io
import os
import subprocess
import tempfile
import time
import unittest
import uuid
import zipfile

import kernel
from kernel import BadRequestError, Kernel, NotFoundError

FIXTURES = os.environ["RBROWSE_FIXTURES_URL"]
LOGIN_SITE = os.environ["RBROWSE_LOGIN_SITE_URL"]


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


class KernelPythonSdk(unittest.TestCase):
    client: Kernel
    session_id: str

    @classmethod
    def setUpClass(cls) -> None:
        # As a user writes it: the key and base URL from the environment, retries off so a refusal shows at once.
        cls.client = Kernel(max_retries=0, timeout=120)
        browser = cls.client.browsers.create(headless=True, name=unique("py"), tags={"suite": "python"}, timeout_seconds=300)
        cls.session_id = browser.session_id

    @classmethod
    def tearDownClass(cls) -> None:
        cls.client.browsers.delete_by_id(cls.session_id)

    def test_version(self) -> None:
        self.assertEqual(kernel.__version__, "0.94.0")

    def test_browsers_by_id_name_tags_and_models(self) -> None:
        by_id = self.client.browsers.retrieve(self.session_id)
        self.assertEqual(by_id.headless, True)
        self.assertTrue(by_id.cdp_ws_url.startswith("ws://"))
        # Fields the 0.94 models require.
        self.assertIsNotNone(by_id.region)
        by_name = self.client.browsers.retrieve(by_id.name)
        self.assertEqual(by_name.session_id, self.session_id)
        tagged = [b.session_id for b in self.client.browsers.list(tags={"suite": "python"})]
        self.assertIn(self.session_id, tagged)
        self.assertEqual([b.session_id for b in self.client.browsers.list(tags={"suite": "nothing-has-this"})], [])
        with self.assertRaises(NotFoundError):
            self.client.browsers.retrieve("no-such-session")

    def test_create_fields_of_0_94(self) -> None:
        proxy = self.client.proxies.create(type="custom", name=unique("py-proxy"), config={"host": "127.0.0.1", "port": 3128})
        browser = self.client.browsers.create(
            headless=True,
            region="eu-west",
            memory="8GiB",
            proxy={"name": proxy.name},
            chrome_policy={"BookmarkBarEnabled": True},
            network={"private_hosts": ["10.0.0.0/8"]},
        )
        try:
            self.assertEqual(browser.region, "eu-west")
            self.assertEqual(browser.memory, "8GiB")
            self.assertEqual(browser.proxy_id, proxy.id)
        finally:
            self.client.browsers.delete_by_id(browser.session_id)
            self.client.proxies.delete(proxy.id)

    def test_every_field_of_the_0_94_types(self) -> None:
        """The full parameter sets the 0.94 types allow, with real ids, and the fields they answer."""
        c = self.client
        profile = c.profiles.create(name=unique("py-full"))
        telemetry = {
            "enabled": True,
            "browser": {"platform": {"enabled": True}, "control": {"enabled": True, "cdp": {"excluded_methods": ["Input.dispatchMouseEvent"]}}},
        }
        browser = c.browsers.create(
            headless=False,
            gpu=False,
            kiosk_mode=True,
            name=unique("py-full"),
            tags={"suite": "full"},
            timeout_seconds=120,
            viewport={"width": 1024, "height": 768},
            start_url=FIXTURES + "/hello.html",
            region="eu-west",
            profile={"name": profile.name},
            telemetry=telemetry,
        )
        try:
            self.assertIs(browser.gpu, False)
            self.assertIs(browser.profile_save_changes, False)
            self.assertTrue(browser.base_url.endswith("/browser/" + browser.session_id), browser.base_url)
            self.assertTrue(browser.telemetry.browser.platform.enabled)
            self.assertEqual(browser.telemetry.browser.control.cdp.excluded_methods, ["Input.dispatchMouseEvent"])
            self.assertIn(browser.session_id, [b.session_id for b in c.browsers.list(region="eu-west")])
            self.assertNotIn(browser.session_id, [b.session_id for b in c.browsers.list(region="us-east")])
            self.assertEqual([b.session_id for b in c.browsers.list(query=profile.name)], [browser.session_id])
            computer = c.browsers.computer
            computer.click_mouse(browser.session_id, x=10, y=10, num_clicks=0)
            computer.scroll(browser.session_id, x=20, y=30)
            self.assertEqual((computer.get_mouse_position(browser.session_id).x, computer.get_mouse_position(browser.session_id).y), (20, 30))
            shot = computer.capture_screenshot(browser.session_id, region={"x": 0, "y": 0, "width": 0, "height": 0}).read()
            self.assertEqual(shot[:8], b"\x89PNG\r\n\x1a\n")
            self.assertEqual(c.browsers.process.exec(browser.session_id, command="true", timeout_sec=0).exit_code, 0)
            with self.assertRaises(BadRequestError):
                c.browsers.process.exec(browser.session_id, command="no-such-program")
        finally:
            c.browsers.delete_by_id(browser.session_id)
        with self.assertRaises(BadRequestError):
            c.browsers.create(headless=False, gpu=True)

        pool = c.browser_pools.create(
            name=unique("py-full-pool"),
            size=1,
            headless=True,
            fill_rate_per_minute=0,
            region="eu-west",
            network={"private_hosts": ["10.0.0.0/8"]},
            profile={"name": profile.name},
            refresh_on_profile_update=True,
            telemetry=telemetry,
            timeout_seconds=60,
        )
        try:
            config = pool.browser_pool_config
            self.assertEqual((pool.region, config.refresh_on_profile_update, config.fill_rate_per_minute), ("eu-west", True, 0))
            self.assertEqual(config.network.private_hosts, ["10.0.0.0/8"])
            self.assertTrue(config.telemetry.browser.platform.enabled)
            self.assertIn(pool.id, [p.id for p in c.browser_pools.list(region="eu-west")])
            updated = c.browser_pools.update(pool.id, refresh_on_profile_update=False, telemetry={"enabled": False}, fill_rate_per_minute=6000)
            self.assertIs(updated.browser_pool_config.refresh_on_profile_update, False)
            leased = c.browser_pools.acquire(pool.id, acquire_timeout_seconds=120, start_url=FIXTURES + "/hello.html", telemetry={"enabled": True})
            self.assertTrue(leased.telemetry.browser.control.enabled)
            c.browser_pools.release(pool.id, session_id=leased.session_id, reuse=False)
        finally:
            c.browser_pools.delete(pool.id, force=True)

        with tempfile.TemporaryDirectory() as tmp:
            subprocess.run(
                ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{tmp}/k", "-out", f"{tmp}/c", "-days", "1", "-subj", "/CN=py MITM CA"],
                check=True,
                capture_output=True,
            )
            with open(f"{tmp}/c") as f:
                ca = f.read()
        proxy = c.proxies.create(type="custom", name=unique("py-mitm"), config={"host": "127.0.0.1", "port": 3128, "ca_bundle": ca})
        self.assertIs(proxy.config.has_ca_bundle, True)
        self.assertEqual(proxy.ip_address, "127.0.0.1")
        conn = c.auth.connections.create(domain="full.example", profile_name=unique("py-full-auth"), proxy={"id": proxy.id, "name": proxy.name}, health_checks=False)
        try:
            with self.assertRaises(BadRequestError) as refused:
                c.proxies.delete(proxy.id)
            self.assertEqual(refused.exception.body["code"], "resource_in_use")
        finally:
            c.auth.connections.delete(conn.id)
        c.proxies.delete(proxy.id)

        limits = c.organization.limits.retrieve()
        self.assertIsNone(limits.max_auth_connections)
        self.assertTrue(c.organization.entitlements.retrieve().features.credential_providers.enabled)
        # The pool's browsers end a moment after its delete: until then the profile is in use.
        deadline = time.time() + 30
        while True:
            try:
                c.profiles.delete(profile.id)
                break
            except kernel.ConflictError:
                if time.time() > deadline:
                    raise
                time.sleep(0.5)

    def test_files_with_the_python_multipart_encoding(self) -> None:
        fs = self.client.browsers.fs
        fs.write_file(self.session_id, b"written from python", path="/tmp/py/deep/note.txt")
        self.assertEqual(fs.read_file(self.session_id, path="/tmp/py/deep/note.txt").read(), b"written from python")
        # files[][file] and files[][dest_path]: the Python SDK's own encoding of a multipart array.
        fs.upload(
            self.session_id,
            files=[
                {"file": ("a.txt", io.BytesIO(b"first")), "dest_path": "/tmp/py/up/a.txt"},
                {"file": ("b.txt", io.BytesIO(b"second")), "dest_path": "/tmp/py/up/b.txt"},
            ],
        )
        names = sorted(f.name for f in fs.list_files(self.session_id, path="/tmp/py/up"))
        self.assertEqual(names, ["a.txt", "b.txt"])
        self.assertEqual(fs.read_file(self.session_id, path="/tmp/py/up/b.txt").read(), b"second")
        self.assertEqual(fs.file_info(self.session_id, path="/tmp/py/up/a.txt").size_bytes, 5)
        archive = io.BytesIO()
        with zipfile.ZipFile(archive, "w") as z:
            z.writestr("inner/c.txt", "zipped")
        fs.upload_zip(self.session_id, dest_path="/tmp/py/zip", zip_file=("c.zip", archive.getvalue()))
        self.assertEqual(fs.read_file(self.session_id, path="/tmp/py/zip/inner/c.txt").read(), b"zipped")

    def test_process_and_playwright(self) -> None:
        r = self.client.browsers.process.exec(self.session_id, command="sh", args=["-c", "echo $((6 * 7)); echo oops >&2; exit 3"])
        self.assertEqual(r.exit_code, 3)
        self.assertEqual(base64.b64decode(r.stdout_b64 or ""), b"42\n")
        self.assertEqual(base64.b64decode(r.stderr_b64 or ""), b"oops\n")
        run = self.client.browsers.playwright.execute(
            self.session_id, code=f"await page.goto({FIXTURES + '/hello.html'!r}); return await page.title();"
        )
        self.assertTrue(run.success, run.error)
        self.assertTrue(run.result)

    def test_computer_screenshot_and_clipboard(self) -> None:
        png = self.client.browsers.computer.capture_screenshot(self.session_id).read()
        self.assertEqual(png[:8], b"\x89PNG\r\n\x1a\n")
        self.client.browsers.computer.write_clipboard(self.session_id, text="from python")
        self.assertEqual(self.client.browsers.computer.read_clipboard(self.session_id).text, "from python")

    def test_sub_resources_routed_to_the_session_base_url(self) -> None:
        # The SDK's own switch: these calls go to the session's base_url with its jwt, no API key.
        os.environ["KERNEL_BROWSER_ROUTING_SUBRESOURCES"] = "computer,fs,process,playwright"
        try:
            routed = Kernel(max_retries=0, timeout=120)
            browser = routed.browsers.retrieve(self.session_id)  # learns base_url and the jwt
            self.assertTrue(browser.base_url)
            routed.browsers.fs.write_file(self.session_id, b"routed", path="/tmp/py/routed.txt")
            self.assertEqual(routed.browsers.fs.read_file(self.session_id, path="/tmp/py/routed.txt").read(), b"routed")
            r = routed.browsers.process.exec(self.session_id, command="true")
            self.assertEqual(r.exit_code, 0)
            # The jwt alone carries them: the same client with a wrong key still reaches the session.
            wrong_key = routed.with_options(api_key="not-a-key")
            self.assertEqual(wrong_key.browsers.fs.read_file(self.session_id, path="/tmp/py/routed.txt").read(), b"routed")
            with self.assertRaises(kernel.AuthenticationError):
                wrong_key.browsers.retrieve(self.session_id)
        finally:
            del os.environ["KERNEL_BROWSER_ROUTING_SUBRESOURCES"]

    def test_profiles_and_pools(self) -> None:
        profile = self.client.profiles.create(name=unique("py-profile"))
        self.assertIn(profile.name, [p.name for p in self.client.profiles.list()])
        pool = self.client.browser_pools.create(name=unique("py-pool"), size=1, headless=True)
        try:
            acquired = self.client.browser_pools.acquire(pool.name, acquire_timeout_seconds=120)
            self.assertTrue(acquired.session_id)
            self.client.browser_pools.release(pool.name, session_id=acquired.session_id, reuse=False)
            self.assertIsNotNone(self.client.browser_pools.retrieve(pool.id).region)
        finally:
            self.client.browser_pools.delete(pool.id, force=True)
            self.client.profiles.delete(profile.id)

    def test_projects_by_name_and_the_organization(self) -> None:
        project = self.client.projects.create(name=unique("py-project"))
        scoped = Kernel(max_retries=0, timeout=120, project=project.name)
        browser = scoped.browsers.create(headless=True)
        try:
            self.assertIn(browser.session_id, [b.session_id for b in scoped.browsers.list()])
            self.assertEqual(scoped.auth.context.retrieve().authorization.effective_scope.project_id, project.id)
            # Another project by name does not see it.
            other = self.client.projects.create(name=unique("py-other"))
            self.assertNotIn(browser.session_id, [b.session_id for b in Kernel(max_retries=0, project=other.name).browsers.list()])
        finally:
            scoped.browsers.delete_by_id(browser.session_id)
        with self.assertRaises(NotFoundError):
            Kernel(max_retries=0, project="no-such-project").browsers.list()
        context = self.client.auth.context.retrieve()
        self.assertEqual(context.authentication.method, "api_key")
        self.assertTrue(context.organization.id)
        self.assertIsNotNone(self.client.organization.entitlements.retrieve())
        self.assertIsNotNone(self.client.organization.limits.retrieve())
        self.assertTrue(any(k for k in self.client.api_keys.list()))

    def test_telemetry_destinations(self) -> None:
        destinations = self.client.telemetry.destinations
        made = destinations.create(name=unique("py-otel"), endpoint="http://127.0.0.1:4318", headers={"x-api-key": "secret"})
        try:
            self.assertEqual(made.headers, {"X-Api-Key": ""})
            self.assertEqual(destinations.retrieve(made.name).id, made.id)
            self.assertIn(made.id, [d.id for d in destinations.list(name=made.name)])
            updated = destinations.update(made.id, headers={"X-Api-Key": None, "Authorization": "Bearer x"})
            self.assertEqual(updated.headers, {"Authorization": ""})
        finally:
            destinations.delete(made.id)
        with self.assertRaises(NotFoundError):
            destinations.retrieve(made.id)

    def test_audit_log_export_destinations(self) -> None:
        destinations = self.client.audit_logs.export_destinations
        made = destinations.create(
            type="s3", format="jsonl.gz", bucket="audit-logs", prefix="py", region="us-east-1",
            role_arn="arn:aws:iam::123456789012:role/rbrowse-audit",
        )
        try:
            self.assertEqual(made.status, "active")
            self.assertTrue(made.external_id and made.kernel_role_arn)
            self.assertEqual(destinations.retrieve(made.id).bucket, "audit-logs")
            self.assertIn(made.id, [d.id for d in destinations.list()])
            self.assertEqual(destinations.update(made.id, status="paused").status, "paused")
            # No AWS here: the test says the role could not be assumed, in the SDK's model.
            result = destinations.test(made.id)
            self.assertEqual((result.stage, result.success), ("assume_role", False))
            self.assertEqual(result.error.code, "assume_role_failed")
        finally:
            destinations.delete(made.id)
        with self.assertRaises(NotFoundError):
            destinations.retrieve(made.id)

    def test_managed_auth_logs_in_with_a_stored_credential(self) -> None:
        name = unique("site")
        self.client.credentials.create(name=name, domain="127.0.0.1", values={"username": "bob", "password": "builder"})
        conn = self.client.auth.connections.create(
            domain="127.0.0.1", profile_name=name, login_url=f"{LOGIN_SITE}/login", credential={"name": name}, health_checks=False
        )
        self.assertEqual(conn.status, "NEEDS_AUTH")
        login = self.client.auth.connections.login(conn.id)
        self.assertEqual(login.flow_type, "LOGIN")
        deadline = time.time() + 60
        state = self.client.auth.connections.retrieve(conn.id)
        while state.flow_status in (None, "IN_PROGRESS") and time.time() < deadline:
            time.sleep(0.5)
            state = self.client.auth.connections.retrieve(conn.id)
        self.assertEqual((state.flow_status, state.status), ("SUCCESS", "AUTHENTICATED"), state.error_message)
        self.assertTrue(state.post_login_url.endswith("/account"))
        events = list(self.client.auth.connections.timeline(conn.id))
        self.assertEqual([(e.type, e.status) for e in events], [("login", "SUCCESS")])
        self.assertEqual([c.id for c in self.client.auth.connections.list(profile_name=name)], [conn.id])
        self.client.auth.connections.delete(conn.id)
        with self.assertRaises(NotFoundError):
            self.client.auth.connections.retrieve(conn.id)

    def test_deleted_session_is_gone(self) -> None:
        browser = self.client.browsers.create(headless=True)
        self.client.browsers.delete_by_id(browser.session_id)
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                if self.client.browsers.retrieve(browser.session_id).deleted_at:
                    return
            except NotFoundError:
                return
            time.sleep(0.2)
        self.fail("the deleted session is still there")


if __name__ == "__main__":
    unittest.main()
