/** Light, dark or the system's choice; remembered in localStorage. */
export type Theme = "auto" | "light" | "dark";

export function currentTheme(): Theme {
  const stored = localStorage.getItem("svc-theme");
  return stored === "light" || stored === "dark" ? stored : "auto";
}

export function applyTheme(theme: Theme = currentTheme()): void {
  if (theme === "auto") {
    localStorage.removeItem("svc-theme");
    delete document.documentElement.dataset.theme;
  } else {
    localStorage.setItem("svc-theme", theme);
    document.documentElement.dataset.theme = theme;
  }
}

export function nextTheme(theme: Theme): Theme {
  return theme === "auto" ? "light" : theme === "light" ? "dark" : "auto";
}
