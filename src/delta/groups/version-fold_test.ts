import assert from "node:assert/strict";
import { foldVersions } from "./version-fold.ts";

/** Real-world layouts and the group key `auto` gives them. */
const TABLE: Array<[string, string]> = [
  // Version folders and version file names
  ["releases/1.2.3/app.zip", "releases/*/app.zip"],
  ["releases/1.2.4/app.zip", "releases/*/app.zip"],
  ["releases/v1.2.3-rc.1/app.zip", "releases/*/app.zip"],
  ["releases/v2/app.zip", "releases/*/app.zip"],
  ["builds/pkg-1.2.3.tgz", "builds/pkg-*.tgz"],
  ["builds/other-0.9.tgz", "builds/other-*.tgz"],
  ["app-1.2.3.7z", "app-*.7z"],
  ["app-1.2.3", "app-*"],
  ["1.2.3.zip", "*.zip"],
  // Maven
  ["com/acme/app/1.2.4/app-1.2.4.jar", "com/acme/app/*/app-*.jar"],
  ["com/acme/app/1.2.4/app-1.2.4-sources.jar", "com/acme/app/*/app-*-sources.jar"],
  ["com/acme/app/1.3.0-SNAPSHOT/app-1.3.0-20240501.123456-7.jar", "com/acme/app/*/app-*.jar"],
  ["org/x/lib/2.0.0-M3/lib-2.0.0-M3.war", "org/x/lib/*/lib-*.war"],
  ["org/x/lib/2.0.0.Final/lib-2.0.0.Final.ear", "org/x/lib/*/lib-*.ear"],
  // npm
  ["@scope/pkg/-/pkg-1.2.3.tgz", "@scope/pkg/-/pkg-*.tgz"],
  ["lodash/-/lodash-4.17.21.tgz", "lodash/-/lodash-*.tgz"],
  ["pkg/-/pkg-1.0.0-beta.2.tgz", "pkg/-/pkg-*.tgz"],
  // PyPI
  ["simple/pkg/pkg-1.2.3-py3-none-any.whl", "simple/pkg/pkg-*-py3-none-any.whl"],
  [
    "numpy-1.26.4-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
    "numpy-*-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
  ],
  ["pkg-2.0.0.post1-py2.py3-none-any.whl", "pkg-*-py2.py3-none-any.whl"],
  ["pkg-1.0rc1.tar.gz", "pkg-*.tar.gz"],
  ["pkg-1.2-macosx_11_0_arm64.whl", "pkg-*-macosx_11_0_arm64.whl"],
  // Debian, RPM, conda
  ["pool/main/p/pkg/pkg_1.2-3_amd64.deb", "pool/main/p/pkg/pkg_*_amd64.deb"],
  ["pool/main/p/pkg/pkg_1.2-3+deb12u1_arm64.deb", "pool/main/p/pkg/pkg_*_arm64.deb"],
  ["el8/pkg-1.2.3-1.el8.x86_64.rpm", "el8/pkg-*.el8.x86_64.rpm"],
  ["conda/linux-64/pkg-1.2.3-py39_0.tar.bz2", "conda/linux-64/pkg-*-py39_*.tar.bz2"],
  ["conda/win-32/pkg-1.2.3-0.conda", "conda/win-32/pkg-*.conda"],
  // GitHub release assets
  [
    "releases/download/v1.2.3/tool_1.2.3_linux_amd64.tar.gz",
    "releases/download/*/tool_*_linux_amd64.tar.gz",
  ],
  [
    "tool-v1.2.3-x86_64-unknown-linux-gnu.tar.gz",
    "tool-*-x86_64-unknown-linux-gnu.tar.gz",
  ],
  ["tool-1.2.3-x86-64.AppImage", "tool-*-x86-64.AppImage"],
  ["go1.22.3.linux-amd64.tar.gz", "go1.*.linux-amd64.tar.gz"],
  ["jdk-8u392-linux-x64.tar.gz", "jdk-*-linux-x64.tar.gz"],
  ["app-1.2.3-win64.zip", "app-*-win64.zip"],
  ["python3/app-1.2.3.zip", "python3/app-*.zip"],
  // Dated backups and build numbers
  ["backups/db-2024-05-01.sql", "backups/db-*.sql"],
  ["backups/db-20240501.sql", "backups/db-*.sql"],
  ["backups/db-2024-05-01T12-00-00Z.dump", "backups/db-*.dump"],
  ["backups/2024/05/01/db.sql", "backups/*/*/*/db.sql"],
  ["backups/2024.05.01/db.bak", "backups/*/db.bak"],
  ["ci/build-1234/app.zip", "ci/build-*/app.zip"],
  ["ci/1234/app.zip", "ci/*/app.zip"],
  // Git short hashes
  ["builds/a1b2c3d/app.zip", "builds/*/app.zip"],
  ["builds/main-a1b2c3d4e5f6/app.zip", "builds/main-*/app.zip"],
  ["assets/app.3f9a2b1c.js", "assets/app.*.js"],
  ["builds/deadbeef/app.zip", "builds/deadbeef/app.zip"],
  // Names with digits that are not versions
  ["i18n/messages.zip", "i18n/messages.zip"],
  ["l10n/utf-8/app.zip", "l10n/utf-8/app.zip"],
  ["docs/iso-8859-1.txt", "docs/iso-8859-1.txt"],
  ["x86_64/app.img", "x86_64/app.img"],
  ["amd64/py3/app.tar", "amd64/py3/app.tar"],
  ["sha-256/app.iso", "sha-256/app.iso"],
  ["libv8/app.zip", "libv8/app.zip"],
  ["k8s/app.zip", "k8s/app.zip"],
  ["data/app.zip", "data/app.zip"],
  ["app.zip", "app.zip"],
  [".zip", ".zip"],
  ["dir/", "dir/"],
];

Deno.test("auto folds the versions of one artifact to one group key", () => {
  const wrong: string[] = [];
  for (const [key, group] of TABLE) {
    const got = foldVersions(key);
    if (got !== group) wrong.push(`${key}: ${got} (want ${group})`);
  }
  assert.deepEqual(wrong, []);
  assert.ok(TABLE.length >= 40);
});

Deno.test("auto keeps different artifacts of one folder apart", () => {
  assert.notEqual(foldVersions("builds/pkg-1.2.3.tgz"), foldVersions("builds/other-1.2.3.tgz"));
  assert.notEqual(foldVersions("r/1.0/app.zip"), foldVersions("r/1.0/app.jar"));
  assert.notEqual(foldVersions("r/app-1.0-linux.zip"), foldVersions("r/app-1.0-windows.zip"));
});
