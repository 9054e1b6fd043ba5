#!/usr/bin/env bash
# Spark needs Java 17 (or newer): the project's only system prerequisite.
set -u
java_bin="${JAVA_HOME:+$JAVA_HOME/bin/}java"
if ! command -v "$java_bin" >/dev/null 2>&1; then
  echo "error: Java 17 is required (Spark runs on the JVM) and no 'java' was found." >&2
  echo "       Install OpenJDK 17 (Debian/Ubuntu: apt-get install openjdk-17-jre-headless) or set JAVA_HOME." >&2
  exit 1
fi
version=$("$java_bin" -version 2>&1 | sed -n 's/.*version "\([0-9][0-9]*\)\(\.\([0-9]*\)\)\{0,1\}.*/\1 \3/p' | head -n 1)
major=${version%% *}
[ "$major" = "1" ] && major=${version##* }
if [ -z "$major" ] || [ "$major" -lt 17 ]; then
  echo "error: Java 17 or newer is required; '$java_bin' is version ${major:-unknown}." >&2
  exit 1
fi
