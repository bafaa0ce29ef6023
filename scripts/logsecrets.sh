#!/usr/bin/env bash
# logsecrets.sh DIR: the secrets check of the test suite's logs (make test runs it after the
# tests). DIR holds every service log the tests kept (*.log: the API servers of the api
# tests, the services and worker processes of the end-to-end tests) and every secret the
# tests were given (secrets-*.txt: API keys, access and refresh tokens, authorization codes,
# session cookies, webhook secrets, passwords, the webhook/OAuth key); see
# store/storetest/logs.go. It fails when a log line holds one of those secrets, or anything
# shaped like a key, token, code or webhook secret.
set -euo pipefail
dir=${1:?usage: logsecrets.sh DIR}

shopt -s nullglob
logs=("$dir"/*.log)
secret_files=("$dir"/secrets-*.txt)
if [ ${#logs[@]} -eq 0 ] || [ ${#secret_files[@]} -eq 0 ]; then
	echo "logsecrets: no kept logs or secrets in $dir: the tests did not keep them (ACCOUNTABLE_TEST_LOGS)" >&2
	exit 1
fi
secrets=$(mktemp)
trap 'rm -f "$secrets"' EXIT
sort -u "${secret_files[@]}" >"$secrets"
shapes='svk_[0-9a-f]{16,}|ory_(at|rt|ac)_[A-Za-z0-9._~-]{16,}|whsec_[A-Za-z0-9_-]{16,}'

# The check must be able to fail: a line holding a noted secret, and one holding a key's
# shape, are found.
probe=$(head -n 1 "$secrets")
printf 'probe %s\n' "$probe" | grep -qF -f "$secrets" || { echo "logsecrets: the secrets match nothing" >&2; exit 1; }
echo 'probe svk_0123456789abcdef0123' | grep -qE "$shapes" || { echo "logsecrets: the shapes match nothing" >&2; exit 1; }

lines=$(cat "${logs[@]}" | wc -l)
found=0
if grep -nF -f "$secrets" "${logs[@]}" | cut -c1-300; then found=1; fi
if grep -nE "$shapes" "${logs[@]}" | cut -c1-300; then found=1; fi
if [ $found -ne 0 ]; then
	echo "logsecrets: FAIL: the log lines above hold a secret" >&2
	exit 1
fi
echo "logsecrets: $lines log lines in ${#logs[@]} files hold none of $(wc -l <"$secrets") secrets and nothing shaped like one"
