# llm-stream proxy: the sanitizing OpenAI-compatible proxy as a container (docs/proxy.md).
#   docker build -t llm-stream-proxy .
#   docker run -p 8809:8809 -e LLM_STREAM_PROXY_UPSTREAM=https://api.deepseek.com/v1 llm-stream-proxy
# Every flag is also an LLM_STREAM_PROXY_* variable; the keys come from the variables named by
# LLM_STREAM_PROXY_CLIENT_KEY_ENV / LLM_STREAM_PROXY_UPSTREAM_KEY_ENV (pass them as secrets, never bake them in).
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

ENV LLM_STREAM_PROXY_HOST=0.0.0.0 LLM_STREAM_PROXY_PORT=8809
EXPOSE 8809
HEALTHCHECK --interval=15s --timeout=3s --start-period=5s --retries=3 \
  CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8809/health', timeout=2)"]
# SIGTERM (docker stop, a rolling update) lets streams in flight finish for up to --grace-period seconds (25),
# then exits 0: give `docker stop -t` / terminationGracePeriodSeconds a little more than that.
STOPSIGNAL SIGTERM
ENTRYPOINT ["llm-stream", "proxy"]
