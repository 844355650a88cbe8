# llm-stream proxy: the sanitizing OpenAI-compatible proxy as a container (docs/proxy.md, "Containers").
#
# The image is published nowhere: build it, tagged with the package's version (pipeline.__version__, what
# `llm-stream --version` prints), and push it to a registry your cluster pulls from (deploy/kubernetes.yaml names
# the same tag):
#   docker build -t llm-stream-proxy:0.2.0 .
#   docker tag llm-stream-proxy:0.2.0 <your-registry>/llm-stream-proxy:0.2.0 && docker push <your-registry>/llm-stream-proxy:0.2.0
#
# It refuses to start without keys: clients must present one of $LLM_STREAM_CLIENT_KEYS (comma-separated), and the
# proxy sends $LLM_STREAM_UPSTREAM_KEY upstream (the variables named below). Pass them from the environment, never
# on the command line or baked into the image:
#   export LLM_STREAM_CLIENT_KEYS=... LLM_STREAM_UPSTREAM_KEY=...
#   docker run -p 8809:8809 -e LLM_STREAM_PROXY_UPSTREAM=https://api.deepseek.com/v1 \
#     -e LLM_STREAM_CLIENT_KEYS -e LLM_STREAM_UPSTREAM_KEY llm-stream-proxy:0.2.0
# Every flag is also an LLM_STREAM_PROXY_* variable. Change the port with -e LLM_STREAM_PROXY_PORT=... (and -p): the
# HEALTHCHECK reads the same variable (a --port flag would win over it and leave the HEALTHCHECK behind). An upstream
# that takes no key: -e LLM_STREAM_PROXY_UPSTREAM_KEY_ENV= (empty).
FROM python:3.12-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /src
COPY pyproject.toml README.md LICENSE ./
COPY operators ./operators
COPY pipeline ./pipeline
RUN pip install '.[proxy]' && rm -rf /src

RUN useradd --system --uid 10001 --no-create-home proxy
USER 10001
WORKDIR /

ENV LLM_STREAM_PROXY_HOST=0.0.0.0 LLM_STREAM_PROXY_PORT=8809 \
    LLM_STREAM_PROXY_CLIENT_KEY_ENV=LLM_STREAM_CLIENT_KEYS LLM_STREAM_PROXY_UPSTREAM_KEY_ENV=LLM_STREAM_UPSTREAM_KEY
EXPOSE 8809
HEALTHCHECK --interval=15s --timeout=3s --start-period=5s --retries=3 \
  CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/health' % os.environ['LLM_STREAM_PROXY_PORT'], timeout=2)"]
# SIGTERM (docker stop, a rolling update) lets streams in flight finish for up to --grace-period seconds (25),
# then exits 0: give `docker stop -t` / terminationGracePeriodSeconds a little more than that.
STOPSIGNAL SIGTERM
ENTRYPOINT ["llm-stream", "proxy"]
