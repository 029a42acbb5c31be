"""Serve the git repositories under one folder over git's smart HTTP protocol, read-only, on loopback.

    python3 git_http.py FOLDER     # prints the port, then serves http://127.0.0.1:<port>/<name>.git

Each request runs `git http-backend` as a CGI program (GIT_PROJECT_ROOT=FOLDER, every repository
exported, pushes refused as git refuses them to an anonymous user), so shallow clones (`--depth 1`)
and protocol v2 work as against a real forge. Started by plugin_repo.GitHttpServer, inside the
tests' offline network namespace. Standard library only.
"""
import os
import subprocess
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote

from mock_model import request_body  # this folder is sys.path[0], whether run as a script or imported


class GitHandler(BaseHTTPRequestHandler):
    root = "."

    def do_GET(self):
        self._backend()

    def do_POST(self):
        self._backend()

    def log_message(self, *_args):
        pass

    def _backend(self):
        path, _, query = self.path.partition("?")
        body = request_body(self.headers, self.rfile) if self.command == "POST" else b""
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "GIT_PROJECT_ROOT": self.root,
               "GIT_HTTP_EXPORT_ALL": "1", "REQUEST_METHOD": self.command, "PATH_INFO": unquote(path),
               "QUERY_STRING": query, "CONTENT_TYPE": self.headers.get("Content-Type", ""),
               "CONTENT_LENGTH": str(len(body)), "REMOTE_ADDR": self.client_address[0],
               "SERVER_PROTOCOL": "HTTP/1.0", "GATEWAY_INTERFACE": "CGI/1.1"}
        for header, variable in (("Content-Encoding", "HTTP_CONTENT_ENCODING"), ("Git-Protocol", "HTTP_GIT_PROTOCOL")):
            if self.headers.get(header):
                env[variable] = self.headers[header]
        done = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True, timeout=120)
        out = done.stdout
        cut = out.find(b"\r\n\r\n")
        head, payload = (out[:cut], out[cut + 4:]) if cut != -1 else out.partition(b"\n\n")[::2]
        status, headers = 200, []
        for line in head.decode("latin-1").splitlines():
            name, _, value = line.partition(":")
            if name.strip().lower() == "status":
                status = int(value.split()[0])
            elif name.strip():
                headers.append((name.strip(), value.strip()))
        if done.returncode != 0 and not head:
            status, payload = 500, done.stderr
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


def main(folder):
    GitHandler.root = os.path.abspath(folder)
    server = ThreadingHTTPServer(("127.0.0.1", 0), GitHandler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main(sys.argv[1])
