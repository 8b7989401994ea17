/**
 * The savings corpus (issue 28): which npm releases it is made of, and the shapes each one is
 * stored in. Pinned sha256 and sizes of the registry tarballs are here so a rebuilt corpus is the
 * same bytes on every machine; derived files (tar, zip, jar, img) are checked against the sums the
 * build wrote beside them (`SHA256SUMS` in the cache dir).
 */

/** Consecutive releases of each package, oldest first. */
export const PACKAGES: Record<string, string[]> = {
  typescript: ["5.6.2", "5.6.3", "5.7.2", "5.7.3", "5.8.2", "5.8.3"],
  prettier: ["3.9.3", "3.9.4", "3.9.5", "3.9.6", "3.9.7", "3.9.8"],
  eslint: ["10.8.0", "10.8.1", "10.9.0", "10.9.1", "10.10.0", "10.11.0"],
  "react-dom": ["19.2.3", "19.2.4", "19.2.5", "19.2.6", "19.2.7", "19.2.8"],
};

/**
 * The image-like series: image k is the concatenation of the tars of five consecutive
 * typescript releases starting at the k-th of IMAGE_RELEASES (~110 MiB each), like a build-cache
 * disk that keeps the last five compilers. Each image drops the oldest release and appends a new
 * one, so most content is shared but sits ~22 MiB earlier than in its predecessor: deltas only
 * find it with a window covering the whole baseline.
 */
export const IMAGE_PACKAGE = "typescript";
export const IMAGE_RELEASES = [
  "5.5.2",
  "5.5.3",
  "5.5.4",
  "5.6.2",
  "5.6.3",
  "5.7.2",
  "5.7.3",
  "5.8.2",
  "5.8.3",
  "5.9.2",
];
export const IMAGE_WINDOW = 5;

/** Kinds of file per release: the registry tarball and three re-packs of its contents. */
export const EXTENSIONS = ["tgz", "tar", "zip", "jar"] as const;
export type Extension = typeof EXTENSIONS[number] | "img";

/** sha256 and size of every registry tarball the corpus downloads (`build.ts --print-pins`). */
export const PINS: Record<string, { sha256: string; size: number }> = {
  "typescript@5.6.2": {
    sha256: "6e954963e7689a13573927021cf1fe2d7f85d7808eba49f03f84cb5d77cdd6bf",
    size: 4174769,
  },
  "typescript@5.6.3": {
    sha256: "ef67f8d8ad895858024b7339d3e34bf112cae3c5db1f538c3079038b17ae30fa",
    size: 4174590,
  },
  "typescript@5.7.2": {
    sha256: "6826f763112d55de0093fd94a4257cabadf1f40b387757e7c68485fc971e886b",
    size: 4231797,
  },
  "typescript@5.7.3": {
    sha256: "80cfca1254bab8e81d639178e42d6406d856fba6e34cad60d1ab50ee6e5f7ebb",
    size: 4232501,
  },
  "typescript@5.8.2": {
    sha256: "ef938a45323df5775664ea5d55e8bc0ab2027a40db1ff857bb957fe7bbaa4434",
    size: 4250087,
  },
  "typescript@5.8.3": {
    sha256: "72e75dbeb92c2e6eb9a34cb59d74fab5c2ee6f32a0324a89405f6165d5a08374",
    size: 4250436,
  },
  "prettier@3.9.3": {
    sha256: "0982b159f787b3818a4f233a46b4dc8b242a1354f07dd13b06fe3f9e93f6b7f2",
    size: 2800471,
  },
  "prettier@3.9.4": {
    sha256: "236949d3528822d117b33a26109bd5d70a3d7828dccd5a0805f9684398888c8b",
    size: 2800438,
  },
  "prettier@3.9.5": {
    sha256: "e9525d1e389f8ab0543fef69d3af87a999db99dcb02a73dc9aeb93e3c48aebbe",
    size: 2799565,
  },
  "prettier@3.9.6": {
    sha256: "997da95cf2ae81053cafc79ef122a6e8dc12e3f2c619d57eb1f2e19525fb212f",
    size: 2800155,
  },
  "prettier@3.9.7": {
    sha256: "57a7b2b4c760cb8b365584826713f44f8efa51398a0c597513b6947ea6c9add3",
    size: 2801565,
  },
  "prettier@3.9.8": {
    sha256: "c33e1990a784e5a4cbc357b0755dac69868eb80a4893940db483cbab4e8aa44f",
    size: 2801538,
  },
  "eslint@10.8.0": {
    sha256: "d17fc2ba1f036a4c6c448d3ae1893a163f29c064a33984b11520c3992e9a66b2",
    size: 620706,
  },
  "eslint@10.8.1": {
    sha256: "1fc88add2fbe3ca8c070a6ff3d84a5bb3794c2dd4da056d8fc59dc640d17ee56",
    size: 621163,
  },
  "eslint@10.9.0": {
    sha256: "7c0636e6b1777c04674783f876ed23ec41c30a57466f1dc47a4a2943fcca5144",
    size: 622066,
  },
  "eslint@10.9.1": {
    sha256: "e7aebee5effb01785c583b3e0f2fb28018c88bc9eb52dc6896a2901c496af5b8",
    size: 622074,
  },
  "eslint@10.10.0": {
    sha256: "897c8ff1a16dbc0420d9815b59bfbad27d079c3ddaef6ee1099bb4b4593c0031",
    size: 622303,
  },
  "eslint@10.11.0": {
    sha256: "2c1c9adad9ba0d7c8b885216a920a46eb4c1d400d04f8baafe2b281aaea945f0",
    size: 627973,
  },
  "react-dom@19.2.3": {
    sha256: "b549d1b35a00d1ea73d2f726e975b0c90ad44177a610557b43e0f1509e7aefd5",
    size: 1276385,
  },
  "react-dom@19.2.4": {
    sha256: "8e26a635367df9b583622a4b24bf7b068505c4b58a6e94876275b7b52731c842",
    size: 1276387,
  },
  "react-dom@19.2.5": {
    sha256: "635a874f93c830a252a80f821c67bbdaf7cd9d5df29ff8a122bbcdf079f22860",
    size: 1276388,
  },
  "react-dom@19.2.6": {
    sha256: "a840fde16696a9a35d06c906796b9c066dcbd214e49d0467d638d5fd4a4c5b11",
    size: 1276390,
  },
  "react-dom@19.2.7": {
    sha256: "e47bae602149b38b90b452c89e53d2d60639fee09361d90374983a6aac62739e",
    size: 1276388,
  },
  "react-dom@19.2.8": {
    sha256: "1ffc99af594271b41835004a9b6789a832eacc5d153169f3bfbd1f76f9547dbb",
    size: 1276383,
  },
  "typescript@5.5.2": {
    sha256: "2f12d2e95610c573b778ac0669497440626c07d6aae6865171e246fce96ddda0",
    size: 4040998,
  },
  "typescript@5.5.3": {
    sha256: "f47d21b40c99188b4158f8a444f132207957d528b1f80ccbc019ce9c4765c3d1",
    size: 4041052,
  },
  "typescript@5.5.4": {
    sha256: "2680b6354d462a1d90a2cf10c790e071f1c45081c9d4561cb47ce23c934d8586",
    size: 4043150,
  },
  "typescript@5.9.2": {
    sha256: "67a3bc82e822b8f45f653a80fc3a9730d23214d36c83ba85dd7f5abebee82062",
    size: 4376902,
  },
};

/** One series to upload: its files oldest first, with the version label each one is stored as. */
export interface Series {
  name: string;
  pkg: string;
  ext: Extension;
  versions: string[];
  files: string[];
}

/** Every series of the corpus in `dir` (the layout build.ts writes). */
export function corpusSeries(dir: string): Series[] {
  const out: Series[] = [];
  for (const ext of EXTENSIONS) {
    for (const [pkg, versions] of Object.entries(PACKAGES)) {
      out.push({
        name: `${pkg}.${ext}`,
        pkg,
        ext,
        versions,
        files: versions.map((v) => `${dir}/${ext}/${pkg}-${v}.${ext}`),
      });
    }
  }
  const starts = IMAGE_RELEASES.slice(0, IMAGE_RELEASES.length - IMAGE_WINDOW + 1);
  out.push({
    name: "ts-cache.img",
    pkg: "ts-cache",
    ext: "img",
    versions: starts,
    files: starts.map((v) => `${dir}/img/ts-cache-${v}.img`),
  });
  return out;
}

/** Every (package, version) whose registry tarball the corpus needs. */
export function allReleases(): { pkg: string; version: string }[] {
  const seen = new Set<string>();
  const out: { pkg: string; version: string }[] = [];
  const add = (pkg: string, version: string) => {
    if (seen.has(`${pkg}@${version}`)) return;
    seen.add(`${pkg}@${version}`);
    out.push({ pkg, version });
  };
  for (const [pkg, versions] of Object.entries(PACKAGES)) versions.forEach((v) => add(pkg, v));
  IMAGE_RELEASES.forEach((v) => add(IMAGE_PACKAGE, v));
  return out;
}
