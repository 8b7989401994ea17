/** The backend conformance suite against the filesystem backend. */
import { backendConformance } from "../../testing/backend-conformance.ts";
import { FilesystemBackend } from "./filesystem-backend.ts";

backendConformance("filesystem", async () => {
  const root = await Deno.makeTempDir({ prefix: "svc-fs-conformance-" });
  return {
    backend: await FilesystemBackend.open(root),
    close: () => Deno.remove(root, { recursive: true }),
  };
});
