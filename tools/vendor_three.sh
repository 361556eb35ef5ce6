#!/usr/bin/env bash
# Vendors three.js (MIT) into assets/viewer/ from the npm registry, for `phyz view`'s pages:
# the single-file ES module build and the orbit controls of one release. r170 is the last
# release whose module build is one file (later ones split it in two).
set -euo pipefail
cd "$(dirname "$0")/.."
version=0.170.0
work=$(mktemp -d)
(cd "$work" && npm pack "three@$version" >/dev/null && tar xzf "three-$version.tgz")
cp "$work/package/build/three.module.min.js" "$work/package/examples/jsm/controls/OrbitControls.js" assets/viewer/
cp "$work/package/LICENSE" assets/viewer/THREE_LICENSE
rm -rf "$work"
echo "three.js $version in assets/viewer/"
