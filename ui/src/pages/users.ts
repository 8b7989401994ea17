/**
 * Users and groups: create with a canned permission template, enable/disable, rotate keys (the
 * new secret is shown once), clone, delete; groups with members.
 */
import { useState } from "preact/hooks";
import { call } from "../api.ts";
import { html } from "../html.ts";
import { ErrorText, Notice, Section, showValue, useAction, useLoad, valueOf } from "../widgets.ts";

interface Template {
  id: string;
  name: string;
  description: string;
  needs_bucket: boolean;
  permissions: { effect: string; actions: string[]; resources: string[] }[];
}
interface User {
  id: string;
  name: string;
  access_key_id: string;
  secret_access_key?: string;
  enabled: boolean;
  groups?: string[];
  permissions: unknown[];
}
interface Group {
  id: string;
  name: string;
  description?: string;
  permissions: unknown[];
  members?: string[];
  member_ids?: string[];
}

/** A template's permissions for `bucket` (`{bucket}` replaced). */
function permissionsOf(template: Template, bucket: string) {
  return template.permissions.map((p) => ({
    ...p,
    resources: p.resources.map((r) => r.replaceAll("{bucket}", bucket)),
  }));
}

function TemplatePicker(
  { templates, onPick }: { templates: Template[]; onPick: (id: string, bucket: string) => void },
) {
  const [id, setId] = useState(templates[0]?.id ?? "");
  const [bucket, setBucket] = useState("");
  const chosen = templates.find((t) => t.id === id);
  return html`<span class="inline">
    <label>Template <select name="template" value=${id}
      onChange=${(e: Event) => {
    setId(valueOf(e));
    onPick(valueOf(e), bucket);
  }}>
      ${templates.map((t) => html`<option value=${t.id}>${t.name}</option>`)}
    </select></label>
    ${
    chosen?.needs_bucket
      ? html`<label>Bucket <input name="template_bucket" required value=${bucket}
          onInput=${(e: Event) => {
        setBucket(valueOf(e));
        onPick(id, valueOf(e));
      }} /></label>`
      : null
  }
  </span>`;
}

export function UsersPage() {
  const users = useLoad(() => call<{ users: User[] }>("users"));
  const groups = useLoad(() => call<{ groups: Group[] }>("groups"));
  const templates = useLoad(() => call<{ policies: Template[] }>("policies"));
  const action = useAction();
  const [secret, setSecret] = useState<User | null>(null);
  const [name, setName] = useState("");
  const [pick, setPick] = useState<{ id: string; bucket: string }>({ id: "", bucket: "" });
  const [groupName, setGroupName] = useState("");
  const list = templates.data?.policies ?? [];
  const chosen = () => list.find((t) => t.id === (pick.id || list[0]?.id));
  const reload = () => {
    users.reload();
    groups.reload();
  };
  const showSecret = (user: User) => {
    setSecret(user);
    reload();
  };
  const createUser = (event: Event) => {
    event.preventDefault();
    const template = chosen();
    action.run(
      () =>
        call<User>("users", {
          body: {
            name: name.trim(),
            permissions: template ? permissionsOf(template, pick.bucket) : [],
          },
        }),
      (user) => {
        setName("");
        showSecret(user);
        return `User "${user.name}" created.`;
      },
    );
  };
  const createGroup = (event: Event) => {
    event.preventDefault();
    const template = chosen();
    action.run(
      () =>
        call<Group>("groups", {
          body: {
            name: groupName.trim(),
            permissions: template ? permissionsOf(template, pick.bucket) : [],
          },
        }),
      (group) => {
        setGroupName("");
        reload();
        return `Group "${group.name}" created.`;
      },
    );
  };
  const userActions = (user: User) =>
    html`
      <button onClick=${() =>
        action.run(() => call<User>(`users/${user.id}/rotate-keys`, { method: "POST" }), (u) => {
          showSecret(u);
          return `Keys of "${u.name}" rotated.`;
        })}>Rotate keys</button>
      <button onClick=${() =>
        action.run(
          () => call(`users/${user.id}`, { method: "PUT", body: { enabled: !user.enabled } }),
          () => {
            reload();
            return `User "${user.name}" ${user.enabled ? "disabled" : "enabled"}.`;
          },
        )}>${user.enabled ? "Disable" : "Enable"}</button>
      <${CloneButton} onClone=${(newName: string) =>
        action.run(() => call<User>(`users/${user.id}/clone`, { body: { name: newName } }), (u) => {
          showSecret(u);
          return `User "${user.name}" cloned as "${u.name}".`;
        })} />
      <${ConfirmButton} label="Delete" onConfirm=${() =>
        action.run(() => call(`users/${user.id}`, { method: "DELETE" }), () => {
          reload();
          return `User "${user.name}" deleted.`;
        })} />
    `;
  return html`<div>
    <${ErrorText} error=${action.error ?? users.error ?? groups.error ?? templates.error} />
    <${Notice} text=${action.notice} />
    ${
    secret
      ? html`
        <div class="card secret" role="alert">
          <h2>Keys for "${secret.name}": shown once</h2>
          <p>Copy the secret now; svc will not show it again.</p>
          <dl class="meta">
            <dt>Access key ID</dt>
            <dd><code class="access-key">${secret.access_key_id}</code></dd>
            <dt>Secret access key</dt>
            <dd><code class="secret-key">${secret.secret_access_key}</code></dd>
          </dl>
          <button onClick=${() => setSecret(null)}>I have saved it</button>
        </div>
      `
      : null
  }
    <${Section} title="Users">
      <form class="inline" onSubmit=${createUser}>
        <label>Name <input name="user_name" required value=${name}
          onInput=${(e: Event) => setName(valueOf(e))} /></label>
        ${
    list.length > 0
      ? html`
        <${TemplatePicker} templates=${list}
          onPick=${(id: string, bucket: string) => setPick({ id, bucket })} />
      `
      : null
  }
        <button type="submit" class="primary" disabled=${action.busy}>Create user</button>
      </form>
      <p class="muted">${chosen()?.description ?? ""}</p>
      <div class="scroll"><table>
        <thead><tr><th>Name</th><th>Access key</th><th>Enabled</th><th>Groups</th><th>Permissions</th><th></th></tr></thead>
        <tbody>${
    (users.data?.users ?? []).map((u) =>
      html`
        <tr data-user=${u.name}>
          <td>${u.name}</td>
          <td><code>${u.access_key_id}</code></td>
          <td>${u.enabled ? "yes" : "no"}</td>
          <td>${showValue(u.groups ?? [])}</td>
          <td><small>${showValue(u.permissions)}</small></td>
          <td class="actions">${userActions(u)}</td>
        </tr>
      `
    )
  }</tbody>
      </table></div>
    <//>
    <${Section} title="Groups">
      <form class="inline" onSubmit=${createGroup}>
        <label>Name <input name="group_name" required value=${groupName}
          onInput=${(e: Event) => setGroupName(valueOf(e))} /></label>
        <span class="muted">uses the template chosen above</span>
        <button type="submit" disabled=${action.busy}>Create group</button>
      </form>
      ${
    (groups.data?.groups ?? []).map((g) =>
      html`<${GroupRow} group=${g} users=${
        users.data?.users ?? []
      } action=${action} onChange=${reload} />`
    )
  }
    <//>
  </div>`;
}

function GroupRow(
  { group, users, action, onChange }: {
    group: Group;
    users: User[];
    action: ReturnType<typeof useAction>;
    onChange: () => void;
  },
) {
  const [userId, setUserId] = useState("");
  const memberIds = group.member_ids ?? [];
  const members = users.filter((u) =>
    memberIds.includes(u.id) || (u.groups ?? []).includes(group.name) ||
    (u.groups ?? []).includes(group.id)
  );
  return html`
    <div class="group card">
      <h3>${group.name}</h3>
      <p class="muted">${group.description ?? ""} <small>${showValue(group.permissions)}</small></p>
      <p>Members: ${members.length === 0
        ? "none"
        : members.map((m) =>
          html`<span class="chip">${m.name}
        <button class="ghost" aria-label=${`Remove ${m.name} from ${group.name}`} onClick=${() =>
            action.run(
              () => call(`groups/${group.id}/members/${m.id}`, { method: "DELETE" }),
              () => {
                onChange();
                return `Removed "${m.name}" from "${group.name}".`;
              },
            )}>✕</button></span>`
        )}</p>
      <form class="inline" onSubmit=${(e: Event) => {
        e.preventDefault();
        action.run(() => call(`groups/${group.id}/members`, { body: { user_id: userId } }), () => {
          onChange();
          return `Added a member to "${group.name}".`;
        });
      }}>
        <label>Add member <select value=${userId} onChange=${(e: Event) => setUserId(valueOf(e))}>
            <option value="">Choose a user</option>
            ${users.map((u) => html`<option value=${u.id}>${u.name}</option>`)}
          </select></label>
        <button type="submit" disabled=${!userId}>Add</button>
        <${CloneButton} onClone=${(name: string) =>
          action.run(() => call(`groups/${group.id}/clone`, { body: { name } }), () => {
            onChange();
            return `Group "${group.name}" cloned as "${name}".`;
          })} />
        <${ConfirmButton} label="Delete group" onConfirm=${() =>
          action.run(() => call(`groups/${group.id}`, { method: "DELETE" }), () => {
            onChange();
            return `Group "${group.name}" deleted.`;
          })} />
      </form>
    </div>
  `;
}

export function ConfirmButton({ label, onConfirm }: { label: string; onConfirm: () => void }) {
  const [asking, setAsking] = useState(false);
  return asking
    ? html`<span class="confirm">Sure?
        <button type="button" class="danger" onClick=${() => {
      setAsking(false);
      onConfirm();
    }}>${label}</button>
        <button type="button" onClick=${() => setAsking(false)}>Keep</button></span>`
    : html`<button type="button" onClick=${() => setAsking(true)}>${label}</button>`;
}

function CloneButton({ onClone }: { onClone: (name: string) => void }) {
  const [open, setOpen] = useState(false);
  const [name, setName] = useState("");
  if (!open) return html`<button type="button" onClick=${() => setOpen(true)}>Clone…</button>`;
  return html`
    <span class="inline">
      <input aria-label="Name of the copy" placeholder="new name" value=${name}
        onInput=${(e: Event) => setName(valueOf(e))} />
      <button type="button" disabled=${!name.trim()} onClick=${() => {
        setOpen(false);
        onClone(name.trim());
      }}>Clone</button>
      <button type="button" onClick=${() => setOpen(false)}>Cancel</button>
    </span>
  `;
}
