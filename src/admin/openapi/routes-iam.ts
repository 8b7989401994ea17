/** Rows of the IAM routes: users, groups, policies, declarative IAM. */
import {
  addMemberBody,
  cloneBody,
  createGroupBody,
  createUserBody,
  updateGroupBody,
  updateUserBody,
} from "../iam/iam-bodies.ts";
import { accessFragmentBody } from "../config/config-bodies.ts";
import { ref } from "./components.ts";
import { area, type RouteSpec } from "./route-spec.ts";

const iam = area("IAM");
const user = { id: "The user's id." };
const group = { id: "The group's id." };
const declarative = "Refused with 403 `iam_declarative` when `access.iam_mode` is declarative.";

export const IAM_ROUTES: RouteSpec[] = [
  iam.get("/users", "List users (never a secret)", {
    response: { type: "object", properties: { users: { type: "array", items: ref("User") } } },
  }),
  iam.post("/users", "Create a user", {
    body: createUserBody,
    status: 201,
    response: ref("UserWithSecret"),
    description: `The secret is answered this once. ${declarative}`,
  }),
  iam.put("/users/:id", "Change a user", {
    params: user,
    body: updateUserBody,
    response: ref("User"),
    description: declarative,
  }),
  iam.delete("/users/:id", "Delete a user", { params: user, response: ref("Deleted") }),
  iam.post("/users/:id/rotate-keys", "Give a user a new key pair", {
    params: user,
    response: ref("UserWithSecret"),
  }),
  iam.post("/users/:id/clone", "Copy a user (groups, permissions) under a new name", {
    params: user,
    body: cloneBody,
    status: 201,
    response: ref("UserWithSecret"),
  }),
  iam.get("/groups", "List groups", {
    response: { type: "object", properties: { groups: { type: "array", items: ref("Group") } } },
  }),
  iam.post("/groups", "Create a group", {
    body: createGroupBody,
    status: 201,
    response: ref("Group"),
    description: declarative,
  }),
  iam.put("/groups/:id", "Change a group", {
    params: group,
    body: updateGroupBody,
    response: ref("Group"),
  }),
  iam.delete("/groups/:id", "Delete a group", { params: group, response: ref("Deleted") }),
  iam.post("/groups/:id/clone", "Copy a group under a new name", {
    params: group,
    body: cloneBody,
    status: 201,
    response: ref("Group"),
  }),
  iam.post("/groups/:id/members", "Add a user to a group", {
    params: group,
    body: addMemberBody,
    response: ref("Group"),
  }),
  iam.delete("/groups/:id/members/:user_id", "Remove a user from a group", {
    params: { ...group, user_id: "The member's user id." },
    response: ref("Group"),
  }),
  iam.get("/iam/version", "The IAM index version in effect", {
    returns: "`{version, store_version}`.",
  }),
  iam.get("/policies", "The canned permission templates", {
    access: "public",
    returns: "`{policies}`.",
  }),
  iam.get("/config/declarative-iam-export", "The database's IAM as a declarative fragment", {
    query: { include_secrets: "true to include secrets (audited at warn)." },
    produces: "application/yaml",
    returns: "An `access:` YAML fragment with `iam_mode: declarative`.",
  }),
  iam.post("/config/declarative-iam-validate", "Check a declarative IAM fragment (dry run)", {
    body: accessFragmentBody,
    returns: "`{ok: true}` and the apply outcome.",
  }),
  iam.post("/config/declarative-iam-apply", "Apply a declarative IAM fragment", {
    body: accessFragmentBody,
    response: ref("ApplyOutcome"),
    description: "Switches `access.iam_mode` to declarative and writes the lists to the file.",
  }),
];
