package org.weir.vr;

import java.io.IOException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.TreeSet;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import org.junit.Ignore;
import org.junit.Test;
import org.junit.experimental.categories.Category;

/**
 * Lists the ValidatesRunner tests of a test jar that a run leaves out by category, one a line:
 * {@code Class#method<TAB>category}. Surefire filters them silently, so the suite's table counts
 * them from this list. A test is ValidatesRunner, and excluded, as JUnit's category filter decides:
 * by the categories on its method and its class (and the class's superclasses), a category
 * matching when it is the named one or extends it.
 *
 * <p>Usage: {@code Excluded <tests.jar> <category>[,<category>...]}, with the jar's dependencies
 * on the classpath.
 */
public final class Excluded {
  private Excluded() {}

  public static void main(String[] args) throws Exception {
    if (args.length != 2) {
      System.err.println("usage: Excluded <tests.jar> <category>[,<category>...]");
      System.exit(2);
    }
    Class<?> vr = Class.forName("org.apache.beam.sdk.testing.ValidatesRunner");
    List<Class<?>> excluded = new ArrayList<>();
    for (String name : args[1].split(",")) {
      if (!name.isBlank()) {
        excluded.add(Class.forName(name.trim()));
      }
    }
    TreeSet<String> out = new TreeSet<>();
    for (String cls : classes(args[0])) {
      Class<?> c;
      try {
        c = Class.forName(cls, false, Excluded.class.getClassLoader());
      } catch (Throwable t) {
        continue; // Surefire could not load it either; it runs no test
      }
      if (Modifier.isAbstract(c.getModifiers()) || c.isInterface()) {
        continue;
      }
      Method[] methods;
      try {
        methods = c.getMethods();
      } catch (Throwable t) {
        continue; // a signature names a class that is not here: not a test class
      }
      for (Method m : methods) {
        if (m.getAnnotation(Test.class) == null || m.getAnnotation(Ignore.class) != null) {
          continue;
        }
        List<Class<?>> cats = categories(c, m);
        if (!matches(cats, vr)) {
          continue;
        }
        for (Class<?> x : excluded) {
          if (matches(cats, x)) {
            out.add(c.getName() + "#" + m.getName() + "\t" + x.getSimpleName());
            break;
          }
        }
      }
    }
    out.forEach(System.out::println);
  }

  private static List<String> classes(String jar) throws IOException {
    List<String> names = new ArrayList<>();
    try (JarFile j = new JarFile(jar)) {
      for (JarEntry e : java.util.Collections.list(j.entries())) {
        String n = e.getName();
        if (n.endsWith(".class") && !n.contains("META-INF")) {
          names.add(n.substring(0, n.length() - ".class".length()).replace('/', '.'));
        }
      }
    }
    return names;
  }

  /** The method's categories and those of its class and the class's superclasses. */
  private static List<Class<?>> categories(Class<?> c, Method m) {
    List<Class<?>> cats = new ArrayList<>();
    Category mc = m.getAnnotation(Category.class);
    if (mc != null) {
      cats.addAll(Arrays.asList(mc.value()));
    }
    for (Class<?> k = c; k != null; k = k.getSuperclass()) {
      Category cc = k.getAnnotation(Category.class);
      if (cc != null) {
        cats.addAll(Arrays.asList(cc.value()));
      }
    }
    return cats;
  }

  private static boolean matches(List<Class<?>> cats, Class<?> want) {
    for (Class<?> k : cats) {
      if (want.isAssignableFrom(k)) {
        return true;
      }
    }
    return false;
  }
}
