# shellcheck shell=sh
# Sourced by ./mvnw before anything else (POSIX sh). Makes sure Maven runs on a JDK >= 22:
#   1. keep JAVA_HOME if it already points to a JDK >= 22;
#   2. else pick the newest JDK >= 22 under /usr/lib/jvm (or $GPUVECTORS_JDK_DIRS, space-separated);
#   3. else fail, saying exactly what to install.
# Set MVNW_VERBOSE=true to see which JDK was chosen.

__gv_min_java=22

# Prints the feature version (e.g. 25) of the JDK at $1, or nothing if it is not a usable JDK.
__gv_java_feature() {
  [ -x "$1/bin/java" ] && [ -x "$1/bin/javac" ] || return 0
  __gv_v=""
  if [ -r "$1/release" ]; then
    __gv_v=$(sed -n 's/^JAVA_VERSION="\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' "$1/release" | head -n 1)
  fi
  if [ -z "$__gv_v" ]; then
    __gv_v=$("$1/bin/java" -XshowSettings:properties -version 2>&1 \
      | sed -n 's/^ *java\.specification\.version = //p' | head -n 1)
  fi
  # "1.8.0_x" -> 8, "25.0.1" -> 25, "25" -> 25, "26-ea" -> 26
  case "$__gv_v" in
    1.*) __gv_v=${__gv_v#1.} ;;
  esac
  __gv_v=${__gv_v%%[!0-9]*}
  printf '%s\n' "$__gv_v"
}

__gv_select_jdk() {
  if [ -n "${JAVA_HOME-}" ]; then
    __gv_f=$(__gv_java_feature "$JAVA_HOME")
    if [ -n "$__gv_f" ] && [ "$__gv_f" -ge "$__gv_min_java" ]; then
      [ "${MVNW_VERBOSE-}" != true ] || echo "mvnw: using JAVA_HOME=$JAVA_HOME (Java $__gv_f)" >&2
      return 0
    fi
    echo "mvnw: JAVA_HOME=$JAVA_HOME is Java ${__gv_f:-?}, need >= $__gv_min_java; looking for another JDK" >&2
  fi
  __gv_best="" __gv_best_f=0
  __gv_had_noglob=false
  case $- in *f*) __gv_had_noglob=true; set +f ;; esac
  for __gv_dir in ${GPUVECTORS_JDK_DIRS:-/usr/lib/jvm /usr/java /opt/java /opt}; do
    for __gv_cand in "$__gv_dir"/*; do
      [ -d "$__gv_cand" ] || continue
      __gv_f=$(__gv_java_feature "$__gv_cand")
      [ -n "$__gv_f" ] || continue
      if [ "$__gv_f" -ge "$__gv_min_java" ] && [ "$__gv_f" -gt "$__gv_best_f" ]; then
        __gv_best=$__gv_cand __gv_best_f=$__gv_f
      fi
    done
  done
  [ "$__gv_had_noglob" = false ] || set -f
  if [ -n "$__gv_best" ]; then
    JAVA_HOME=$__gv_best
    export JAVA_HOME
    [ "${MVNW_VERBOSE-}" != true ] || echo "mvnw: using JAVA_HOME=$JAVA_HOME (Java $__gv_best_f)" >&2
    return 0
  fi
  cat >&2 <<MSG
mvnw: no JDK >= $__gv_min_java found (JAVA_HOME=${JAVA_HOME-<unset>}; searched ${GPUVECTORS_JDK_DIRS:-/usr/lib/jvm /usr/java /opt/java /opt}).
gpu-vectors needs JDK $__gv_min_java or newer (Elasticsearch 9.5 / Lucene 10, java.lang.foreign).
Install Temurin 25, e.g. on Debian/Ubuntu:
    apt-get install temurin-25-jdk     (from the Adoptium apt repository, https://adoptium.net/installation/linux/)
or set JAVA_HOME to a JDK 22+ and run ./mvnw again.
MSG
  return 1
}

__gv_select_jdk || exit 1
